// The console works without this file; it adds confirm dialogs, copy buttons, and the
// refresh of live values: every few seconds it fetches /console/live.json (naming the
// sessions the page shows) and writes each value into the element whose `data-live`
// names its key; `data-live-src` images are fetched again.
"use strict";

const LIVE_REFRESH_MS = 4000;

document.addEventListener("submit", (event) => {
  const message = event.target.dataset.confirm;
  if (message && !window.confirm(message)) {
    event.preventDefault();
  }
});

document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button || !navigator.clipboard) {
    return;
  }
  const source = document.getElementById(button.dataset.copy);
  navigator.clipboard.writeText(source.textContent.trim()).then(() => {
    button.textContent = "Copied";
  });
});

function liveUrl() {
  // The sessions this page shows, so one that ends while watched still gets its words.
  const sessions = new Set();
  for (const element of document.querySelectorAll("[data-live^='session:']")) {
    sessions.add(element.dataset.live.split(":")[1]);
  }
  const query = new URLSearchParams([...sessions].map((id) => ["session", id]));
  return sessions.size ? `/console/live.json?${query}` : "/console/live.json";
}

async function refreshLiveValues() {
  // A signed-out session answers with a redirect to sign-in: not JSON, so stop.
  const response = await fetch(liveUrl(), {
    credentials: "same-origin",
    redirect: "manual",
    headers: { Accept: "application/json" },
  });
  if (!response.ok) {
    return false;
  }
  const values = await response.json();
  for (const element of document.querySelectorAll("[data-live]")) {
    const value = values[element.dataset.live];
    if (value === undefined) {
      continue;
    }
    if (element.textContent !== value) {
      element.textContent = value;
    }
    element.hidden = value === ""; // a badge with nothing to say ("in session" no more)
    if (element.classList.contains("badge") && (value === "online" || value === "offline")) {
      element.classList.remove("online", "offline");
      element.classList.add(value);
    }
  }
  for (const image of document.querySelectorAll("img[data-live-src]")) {
    // Swapped in only once loaded: a session that just ended leaves its last frame up
    // rather than a broken image.
    const next = new Image();
    next.addEventListener("load", () => {
      image.src = next.src;
    });
    next.src = `${image.dataset.liveSrc}?at=${Date.now()}`;
  }
  return true;
}

function startLiveRefresh() {
  const hasLiveParts = document.querySelector("[data-live], img[data-live-src]") !== null;
  if (!hasLiveParts) {
    return;
  }
  const timer = window.setInterval(() => {
    if (document.hidden) {
      return; // a background tab polls nothing
    }
    refreshLiveValues()
      .then((keepGoing) => {
        if (!keepGoing) {
          window.clearInterval(timer);
        }
      })
      .catch(() => window.clearInterval(timer));
  }, LIVE_REFRESH_MS);
}

document.addEventListener("DOMContentLoaded", startLiveRefresh);
