// Rigway live view: the rig's video (peer.js) with its frame rate and size.
// window.rigwayViewer exposes the state for people and tests alike.
"use strict";

(() => {
  const root = document.getElementById("viewer");
  const config = JSON.parse(root.dataset.config);
  const video = document.getElementById("video");
  const stateEl = document.getElementById("state");
  const fpsEl = document.getElementById("fps");
  const sizeEl = document.getElementById("size");
  const status = {
    state: "connecting", ended: false, reason: null, encoder: null, codec: null,
    fps: 0, framesDecoded: 0, framesDropped: 0, width: 0, height: 0,
  };
  window.rigwayViewer = status;

  function show(text, kind) {
    status.state = text;
    stateEl.textContent = text;
    stateEl.className = kind || "";
  }

  const { pc, ws, offered } = window.rigwayPeer(config, video, show, () => status.ended);

  ws.onmessage = async (event) => {
    const message = JSON.parse(event.data);
    if (message.type === "answer") {
      status.encoder = message.encoder;
      await pc.setRemoteDescription({ type: "answer", sdp: message.sdp });
    } else if (message.type === "bye") {
      end(message.reason === "session_ended" ? "session ended" : `ended (${message.reason})`);
    } else if (message.type === "error") {
      show(`error: ${message.error}`, "failed");
    }
  };

  ws.onclose = (event) => {
    if (status.ended) return;
    if (event.code >= 4000 || !offered()) {
      end(`refused: ${event.reason || event.code}`);
    } else {
      // The media flows peer to peer: it may outlive the signaling socket.
      show(`${pc.connectionState} (signaling closed)`, "");
    }
  };

  function end(reason) {
    status.ended = true;
    status.reason = reason;
    pc.close();
    fpsEl.textContent = "";
    show(reason, "ended");
  }

  let last = { at: performance.now(), frames: 0 };
  setInterval(async () => {
    if (status.ended) return;
    const stats = await pc.getStats();
    let inbound = null;
    const codecs = {};
    stats.forEach((r) => {
      if (r.type === "inbound-rtp" && r.kind === "video") inbound = r;
      if (r.type === "codec") codecs[r.id] = r;
    });
    if (!inbound) return;
    const now = performance.now();
    const frames = inbound.framesDecoded || 0;
    status.fps = Math.round(((frames - last.frames) * 10000) / (now - last.at)) / 10;
    status.framesDecoded = frames;
    status.framesDropped = inbound.framesDropped || 0;
    status.codec = codecs[inbound.codecId] ? codecs[inbound.codecId].mimeType : null;
    status.width = video.videoWidth;
    status.height = video.videoHeight;
    last = { at: now, frames };
    fpsEl.textContent = `${status.fps} fps`;
    sizeEl.textContent = status.width ? `${status.width}×${status.height} ${status.codec || ""}` : "";
  }, 1000);
})();
