// The console's replay of a recording, one step at a time: the step's frame (an input
// batch shows the frame it acted on, the last one before it) with its action drawn on
// it, the targets the recorder last saw, and the step's timings. Steps come from
// steps.json, frames from frames/<seq>.jpg; text goes in as text, never as markup.
"use strict";

(() => {
  const root = document.getElementById("replay");
  if (root === null) return;
  const canvas = document.getElementById("replay-frame");
  const context = canvas.getContext("2d");
  const position = document.getElementById("replay-position");
  const previous = document.getElementById("replay-previous");
  const next = document.getElementById("replay-next");
  const kindHeading = document.getElementById("replay-kind");
  const action = document.getElementById("replay-action");
  const timing = document.getElementById("replay-timing");
  const targetsList = document.getElementById("replay-targets");
  const targetsNote = document.getElementById("replay-targets-note");
  const frameNote = document.getElementById("replay-frame-note");
  const MARK = "#e0322b";
  const RING = 14; // the click marker's radius, in CSS pixels
  const TARGET = "rgba(36, 84, 214, 0.75)";
  const POINTER = new Set(["mouse_move", "mouse_click", "mouse_down", "mouse_up", "mouse_scroll"]);
  const images = new Map();
  // Canvas pixels per CSS pixel: marks and captions keep their size on screen however
  // far the frame is scaled down to fit.
  let unit = 1;
  let steps = [];
  let index = 0;

  function image(seq) {
    if (!images.has(seq)) {
      images.set(seq, new Promise((resolve, reject) => {
        const picture = new Image();
        picture.onload = () => resolve(picture);
        picture.onerror = () => reject(new Error(`frame ${seq} did not load`));
        picture.src = `${root.dataset.framesUrl}${seq}.jpg`;
      }));
    }
    return images.get(seq);
  }

  function lastBefore(at, test) {
    for (let i = at; i >= 0; i -= 1) {
      if (test(steps[i])) return steps[i];
    }
    return null;
  }

  function scaleOf(frameStep) {
    const region = frameStep.region || [0, 0, frameStep.native_width, frameStep.native_height];
    const sx = frameStep.width / region[2];
    const sy = frameStep.height / region[3];
    return (x, y) => [(x - region[0]) * sx, (y - region[1]) * sy];
  }

  // The point each pointer event used: its receipt's (a target's centre resolved on the
  // host), else its own.
  function pointsOf(step) {
    const receipts = new Map((step.receipts || []).map((receipt) => [receipt.index, receipt]));
    return step.events.map((event, i) => {
      const receipt = receipts.get(i);
      const x = receipt && receipt.x !== null && receipt.x !== undefined ? receipt.x : event.x;
      const y = receipt && receipt.y !== null && receipt.y !== undefined ? receipt.y : event.y;
      return POINTER.has(event.type) && x !== undefined && x !== null ? [x, y] : null;
    });
  }

  function ring(x, y, label) {
    context.lineWidth = 3 * unit;
    context.strokeStyle = MARK;
    context.beginPath();
    context.arc(x, y, RING * unit, 0, 2 * Math.PI);
    context.stroke();
    context.fillStyle = MARK;
    context.beginPath();
    context.arc(x, y, 3 * unit, 0, 2 * Math.PI);
    context.fill();
    context.font = `bold ${Math.round(14 * unit)}px system-ui, sans-serif`;
    context.fillText(label, x + (RING + 2) * unit, y - 12 * unit);
  }

  function caption(lines) {
    if (lines.length === 0) return;
    context.font = `${Math.round(14 * unit)}px ui-monospace, Menlo, Consolas, monospace`;
    const line = 20 * unit;
    const width = Math.max(...lines.map((text) => context.measureText(text).width)) + line;
    const height = lines.length * line + line / 2;
    const top = canvas.height - height - line / 2;
    context.fillStyle = "rgba(29, 35, 48, 0.85)";
    context.fillRect(line / 2, top, width, height);
    context.fillStyle = "#ffffff";
    lines.forEach((text, i) => context.fillText(text, line, top + (i + 1) * line));
  }

  // Draws an input batch on its frame; answers what it drew, for the page's tests.
  function drawInput(step, toImage) {
    const points = pointsOf(step);
    const drawn = [];
    const path = points.filter((point) => point !== null).map(([x, y]) => toImage(x, y));
    const isDrag = step.events.some((event) => event.type === "mouse_down") && path.length > 1;
    if (path.length > 1) {
      context.lineWidth = (isDrag ? 3 : 1.5) * unit;
      context.strokeStyle = MARK;
      context.setLineDash(isDrag ? [] : [6 * unit, 4 * unit]);
      context.beginPath();
      path.forEach(([x, y], i) => (i === 0 ? context.moveTo(x, y) : context.lineTo(x, y)));
      context.stroke();
      context.setLineDash([]);
      if (isDrag) drawn.push("drag");
    }
    const typed = [];
    step.events.forEach((event, i) => {
      const point = points[i];
      if (point !== null && ["mouse_click", "mouse_down", "mouse_up"].includes(event.type)) {
        const [x, y] = toImage(point[0], point[1]);
        ring(x, y, String(i + 1));
        drawn.push(`${event.type === "mouse_click" ? "click" : event.type} ${point[0]},${point[1]}`);
      } else if (point !== null && event.type === "mouse_scroll") {
        const [x, y] = toImage(point[0], point[1]);
        ring(x, y, `${i + 1} scroll ${event.dx || 0},${event.dy || 0}`);
        drawn.push(`scroll ${point[0]},${point[1]}`);
      } else if (event.type === "type_text") {
        typed.push(`${i + 1}. type "${event.text}"`);
        drawn.push("type");
      } else if (event.type.startsWith("key_")) {
        typed.push(`${i + 1}. ${event.type.replace("_", " ")} ${event.key}`);
        drawn.push("key");
      }
    });
    caption(typed);
    return drawn;
  }

  function drawTargets(targets, toImage) {
    context.lineWidth = 1.5 * unit;
    for (const target of targets) {
      const [x, y] = toImage(target.x, target.y);
      const [right, bottom] = toImage(target.x + target.w, target.y + target.h);
      context.strokeStyle = target.focused ? MARK : TARGET;
      context.strokeRect(x, y, right - x, bottom - y);
    }
  }

  function describe(step) {
    if (step.kind === "screenshot") {
      const region = step.region ? ` of ${step.region.join(",")}` : "";
      return `Screenshot${region}: ${step.width}×${step.height} (frame ${step.frame_id || "–"})`;
    }
    if (step.kind === "observe") {
      const shown = step.image ? `${step.width}×${step.height} image` : "no image";
      return `Observe, ${shown}: ${step.summary}`;
    }
    const parts = step.events.map((event) => {
      if (event.type === "type_text") return `type "${event.text}"`;
      if (event.type.startsWith("key_")) return `${event.type.replace("_", " ")} ${event.key}`;
      const where = event.target ? `target ${event.target}` : `${event.x},${event.y}`;
      return `${event.type.replace("mouse_", "")} at ${where}`;
    });
    let outcome = "done";
    if (step.outcome !== "done" && step.error) {
      const at = step.error.stopped_at === null ? "" : ` at event ${step.error.stopped_at + 1}`;
      outcome = `${step.outcome}: ${step.error.code}${at}`;
    }
    return `Input (${outcome}): ${parts.join(" · ")}`;
  }

  function fact(term, value) {
    const dt = document.createElement("dt");
    dt.textContent = term;
    const dd = document.createElement("dd");
    dd.textContent = value;
    timing.append(dt, dd);
  }

  function showTiming(step) {
    timing.replaceChildren();
    fact("At", `+${(step.t_ms / 1000).toFixed(3)} s (${step.at.replace("T", " ").slice(0, 23)})`);
    const t = step.timing || {};
    if (step.kind === "screenshot") {
      fact("Link", `${t.link_ms} ms`);
      fact("Host JPEG", `${t.host_jpeg_ms} ms${t.cached ? " (cached)" : ""}`);
    } else if (step.kind === "observe") {
      fact("Total", `${t.total_ms} ms`);
      fact("Screenshot / targets", `${t.screenshot_rtt_ms} / ${t.targets_rtt_ms} ms`);
    } else {
      fact("Batch", t.batch_ms === null ? "–" : `${t.batch_ms} ms`);
      if (step.settle) fact("Settle", `${step.settle.settled ? "settled" : "not settled"} after ${step.settle.waited_ms} ms`);
      fact("Receipts", step.receipts.map((r) => `${r.index + 1}@${r.at_ms}ms${r.ok ? "" : " ✗"}`).join(" "));
    }
  }

  function showTargets(at) {
    const source = lastBefore(at, (step) => step.kind === "observe");
    targetsList.replaceChildren();
    if (source === null) {
      targetsNote.textContent = "(none seen yet)";
      return [];
    }
    targetsNote.textContent = source.seq === steps[at].seq ? "(this observe)" : `(from step ${source.seq})`;
    for (const target of source.targets) {
      const item = document.createElement("li");
      item.className = target.focused ? "focused" : "";
      const role = document.createElement("span");
      role.className = "role";
      role.textContent = ` (${target.role})`;
      item.append(target.name || "(unnamed)", role);
      if (target.value !== null && target.value !== undefined) {
        const value = document.createElement("span");
        value.className = "value";
        value.textContent = ` = ${target.value}`;
        item.append(value);
      }
      targetsList.append(item);
    }
    return source.targets;
  }

  async function show(at) {
    index = Math.max(0, Math.min(steps.length - 1, at));
    const step = steps[index];
    position.textContent = `Step ${index + 1} of ${steps.length}`;
    previous.disabled = index === 0;
    next.disabled = index === steps.length - 1;
    kindHeading.textContent = `${step.seq}. ${step.kind}`;
    action.textContent = describe(step);
    showTiming(step);
    const targets = showTargets(index);
    history.replaceState(null, "", `#step-${index + 1}`);
    const frameStep = lastBefore(index, (candidate) => candidate.frame !== null);
    canvas.dataset.drawn = "";
    if (frameStep === null) {
      context.clearRect(0, 0, canvas.width, canvas.height);
      frameNote.textContent = "No frame recorded before this step.";
      canvas.dataset.step = String(step.seq);
      return;
    }
    const picture = await image(frameStep.seq);
    if (steps[index] !== step) return; // moved on while it loaded
    canvas.width = picture.naturalWidth;
    canvas.height = picture.naturalHeight;
    context.drawImage(picture, 0, 0);
    unit = canvas.clientWidth > 0 ? Math.max(1, canvas.width / canvas.clientWidth) : 1;
    const toImage = scaleOf(frameStep);
    let drawn = [];
    if (step.kind === "input") {
      drawn = drawInput(step, toImage);
    } else if (step.kind === "observe") {
      drawTargets(targets, toImage);
      drawn = ["targets"];
    }
    const own = frameStep.seq === step.seq ? "this step's frame" : `the frame of step ${frameStep.seq}`;
    frameNote.textContent = `${own}: ${frameStep.width}×${frameStep.height} of ${frameStep.native_width}×${frameStep.native_height} native`;
    canvas.dataset.drawn = drawn.join("; ");
    canvas.dataset.ringPx = String(RING * unit);
    canvas.dataset.step = String(step.seq);
  }

  previous.addEventListener("click", () => show(index - 1));
  next.addEventListener("click", () => show(index + 1));
  document.addEventListener("keydown", (event) => {
    if (event.key === "ArrowLeft") show(index - 1);
    if (event.key === "ArrowRight") show(index + 1);
  });

  // #step-N names a step: a link to one, or the address typed anew.
  function wantedStep() {
    const wanted = /^#step-(\d+)$/.exec(window.location.hash);
    return wanted ? Number(wanted[1]) - 1 : 0;
  }
  window.addEventListener("hashchange", () => {
    if (steps.length > 0 && wantedStep() !== index) show(wantedStep());
  });

  fetch(root.dataset.stepsUrl, { credentials: "same-origin" })
    .then((response) => response.json())
    .then((body) => {
      steps = body.steps;
      return show(wantedStep());
    })
    .catch((error) => {
      action.textContent = `The recording could not be read: ${error.message}`;
    });
})();
