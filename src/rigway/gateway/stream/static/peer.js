// Rigway's live video, shared by the live view and the take control page: one
// RTCPeerConnection that receives the rig's H.264 video, negotiated on the gateway's
// signaling WebSocket with the page's one-time token (docs/stream.md).
// rigwayPeer(config, video, show, isEnded) opens both and returns
// { pc, ws, send, offered }; the page then sets ws.onmessage and ws.onclose.
"use strict";

window.rigwayPeer = (config, video, show, isEnded) => {
  const token = new URLSearchParams(location.search).get("token") || "";
  const pc = new RTCPeerConnection({ iceServers: config.ice_servers });
  const transceiver = pc.addTransceiver("video", { direction: "recvonly" });
  // H.264 first: the agent encodes H.264 (hardware where it can) and answers with the
  // first codec of the offer it knows.
  const capabilities = RTCRtpReceiver.getCapabilities("video");
  if (capabilities && transceiver.setCodecPreferences) {
    const isH264 = (c) => c.mimeType.toLowerCase() === "video/h264";
    transceiver.setCodecPreferences([
      ...capabilities.codecs.filter(isH264),
      ...capabilities.codecs.filter((c) => !isH264(c)),
    ]);
  }
  pc.ontrack = (event) => {
    video.srcObject = event.streams[0] || new MediaStream([event.track]);
  };
  pc.onconnectionstatechange = () => {
    if (isEnded()) return;
    const s = pc.connectionState;
    show(s, s === "connected" ? "connected" : s === "failed" ? "failed" : "");
  };

  const query = new URLSearchParams({ token, session_id: config.session_id });
  const ws = new WebSocket(`${config.signaling_url}?${query}`);
  const early = [];
  let offered = false;
  // Whether the message went out (false once the socket closed).
  const send = (message) => {
    if (ws.readyState !== WebSocket.OPEN) return false;
    ws.send(JSON.stringify(message));
    return true;
  };

  pc.onicecandidate = (event) => {
    const c = event.candidate;
    const message = {
      type: "candidate",
      candidate: c ? c.candidate : null,
      sdpMid: c ? c.sdpMid : null,
      sdpMLineIndex: c ? c.sdpMLineIndex : null,
    };
    if (offered) send(message); else early.push(message);
  };

  ws.onopen = async () => {
    show("negotiating");
    await pc.setLocalDescription(await pc.createOffer());
    send({ type: "offer", sdp: pc.localDescription.sdp });
    offered = true;
    early.splice(0).forEach(send);
  };

  return { pc, ws, send, offered: () => offered };
};
