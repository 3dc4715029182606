// Rigway take control: the live view (peer.js: the rig's video)
// plus this person's mouse and keyboard, sent on the signaling socket while they hold
// control, and a button that hands control back (docs/api.md, Human takeover).
// window.rigwayTakeover exposes the state for people and tests alike.
"use strict";

(() => {
  const root = document.getElementById("takeover");
  const config = JSON.parse(root.dataset.config);
  const video = document.getElementById("video");
  const stateEl = document.getElementById("state");
  const controlEl = document.getElementById("control");
  const handBack = document.getElementById("hand-back");
  const status = {
    state: "connecting", control: "api", ended: false, reason: null,
    errors: [], sent: 0, width: 0, height: 0,
  };
  window.rigwayTakeover = status;

  function show(text, kind) {
    status.state = text;
    stateEl.textContent = text;
    stateEl.className = kind || "";
  }

  function setControl(control) {
    status.control = control;
    controlEl.textContent = control === "human" ? "you have control" : "watching";
    controlEl.className = control;
    video.classList.toggle("driving", control === "human");
    handBack.disabled = control !== "human";
    if (control === "human") video.focus();
  }

  // ---- the video (as the live view) ---------------------------------------------------

  const { pc, ws, send } = window.rigwayPeer(config, video, show, () => status.ended);
  video.addEventListener("resize", () => {
    status.width = video.videoWidth;
    status.height = video.videoHeight;
  });

  ws.onmessage = async (event) => {
    const message = JSON.parse(event.data);
    if (message.type === "answer") {
      await pc.setRemoteDescription({ type: "answer", sdp: message.sdp });
    } else if (message.type === "control") {
      setControl(message.control);
      if (message.control === "api") end(message.reason === "handed_back" ? "handed back" : `control returned (${message.reason})`);
    } else if (message.type === "bye") {
      end(message.reason === "session_ended" ? "session ended" : `ended (${message.reason})`);
    } else if (message.type === "error") {
      status.errors.push(message.error);
    }
  };

  ws.onclose = (event) => {
    if (status.ended) return;
    end(event.code >= 4000 ? `refused: ${event.reason || event.code}` : "disconnected");
  };

  // The gateway hands control back when it stops hearing from this page.
  const heartbeat = setInterval(() => send({ type: "ping" }), 1000);

  function end(reason) {
    status.ended = true;
    status.reason = reason;
    clearInterval(heartbeat);
    setControl("api");
    handBack.disabled = true;
    pc.close();
    show(reason, "ended");
  }

  handBack.addEventListener("click", () => send({ type: "hand_back" }));

  // ---- input -------------------------------------------------------------------------

  const driving = () => status.control === "human" && !status.ended;
  const held = { buttons: new Set(), keys: new Map() };

  function sendInput(message) {
    if (driving() && send(message)) status.sent += 1;
  }

  // A point of the page as a pixel of the video itself: the picture is letterboxed
  // inside the element (object-fit: contain), and the gateway maps video pixels onto
  // the desktop's.
  function videoPoint(event) {
    const vw = video.videoWidth;
    const vh = video.videoHeight;
    if (!vw || !vh) return null;
    const box = video.getBoundingClientRect();
    const scale = Math.min(box.width / vw, box.height / vh);
    const left = box.left + (box.width - vw * scale) / 2;
    const top = box.top + (box.height - vh * scale) / 2;
    const x = Math.floor((event.clientX - left) / scale);
    const y = Math.floor((event.clientY - top) / scale);
    return {
      x: Math.min(Math.max(x, 0), vw - 1),
      y: Math.min(Math.max(y, 0), vh - 1),
      width: vw,
      height: vh,
    };
  }

  const BUTTONS = ["left", "middle", "right"];

  video.addEventListener("mousemove", (event) => {
    const point = videoPoint(event);
    if (point) sendInput({ type: "mouse_move", ...point });
  });
  video.addEventListener("mousedown", (event) => {
    const point = videoPoint(event);
    const button = BUTTONS[event.button];
    if (!point || !button || !driving()) return;
    event.preventDefault();
    video.focus();
    held.buttons.add(button);
    sendInput({ type: "mouse_down", button, ...point });
  });
  // On the window: a press that started on the video may end outside it.
  window.addEventListener("mouseup", (event) => {
    const button = BUTTONS[event.button];
    if (!button || !held.buttons.delete(button)) return;
    // Off the video: released where the pointer last was on the rig.
    const point = event.target === video ? videoPoint(event) : null;
    sendInput(point ? { type: "mouse_up", button, ...point } : { type: "mouse_up", button });
  });
  video.addEventListener("contextmenu", (event) => {
    if (driving()) event.preventDefault();
  });
  video.addEventListener("wheel", (event) => {
    const point = videoPoint(event);
    if (!point || !driving()) return;
    event.preventDefault();
    // A notch is about 100 px of deltaY in pixel mode; up is positive on the rig.
    const notches = (delta) => {
      if (delta === 0) return 0;
      const lines = event.deltaMode === 0 ? delta / 100 : delta;
      return -Math.sign(delta) * Math.max(1, Math.round(Math.abs(lines)));
    };
    sendInput({ type: "mouse_scroll", ...point, dx: -notches(event.deltaX), dy: notches(event.deltaY) });
  }, { passive: false });

  // Keys by their place on the keyboard (event.code) unless they type a character the
  // rig has a key name for; a key goes up under the name it went down with.
  const CODES = {
    Space: "space", Enter: "enter", NumpadEnter: "enter", Tab: "tab", Escape: "escape",
    Backspace: "backspace", Delete: "delete", Insert: "insert", Home: "home", End: "end",
    PageUp: "pageup", PageDown: "pagedown", ArrowUp: "up", ArrowDown: "down",
    ArrowLeft: "left", ArrowRight: "right", ShiftLeft: "shift", ShiftRight: "shift",
    ControlLeft: "ctrl", ControlRight: "ctrl", AltLeft: "alt", AltRight: "alt",
    MetaLeft: "win", MetaRight: "win", CapsLock: "capslock", PrintScreen: "printscreen",
    ContextMenu: "menu", Minus: "-", Equal: "=", BracketLeft: "[", BracketRight: "]",
    Backslash: "\\", Semicolon: ";", Quote: "'", Backquote: "`", Comma: ",",
    Period: ".", Slash: "/", NumpadAdd: "+", NumpadSubtract: "-",
    NumpadMultiply: "*", NumpadDivide: "/", NumpadDecimal: ".",
  };
  const PRINTABLE = /^[a-z0-9!-/:-@[-`{-~]$/;

  function keyName(event) {
    const lowered = event.key.length === 1 ? event.key.toLowerCase() : "";
    if (PRINTABLE.test(lowered)) return lowered;
    const code = event.code;
    if (CODES[code]) return CODES[code];
    let match = /^Key([A-Z])$/.exec(code);
    if (match) return match[1].toLowerCase();
    match = /^(?:Digit|Numpad)([0-9])$/.exec(code);
    if (match) return match[1];
    match = /^F([0-9]{1,2})$/.exec(code);
    if (match) return `f${match[1]}`;
    return null;
  }

  window.addEventListener("keydown", (event) => {
    if (!driving() || event.target === handBack) return;
    event.preventDefault();
    const name = keyName(event);
    if (name) {
      held.keys.set(event.code, name);
      sendInput({ type: "key_down", key: name });
    } else if (event.key.length === 1 && !event.ctrlKey && !event.altKey && !event.metaKey) {
      sendInput({ type: "type_text", text: event.key });  // é, ß, …: no key name spells it
    }
  });
  window.addEventListener("keyup", (event) => {
    const name = held.keys.get(event.code);
    if (name === undefined) return;
    event.preventDefault();
    held.keys.delete(event.code);
    sendInput({ type: "key_up", key: name });
  });
  // Keys and buttons let go while the page had no focus never send their up: release
  // them now, as the gateway would at a hand back.
  window.addEventListener("blur", () => {
    held.keys.forEach((name) => sendInput({ type: "key_up", key: name }));
    held.keys.clear();
    held.buttons.forEach((button) => sendInput({ type: "mouse_up", button }));
    held.buttons.clear();
  });
})();
