// The rating page. Every click is posted at once. Until the server confirms it, the answer waits in an
// outbox kept in localStorage, so a network failure, a server error or a closed tab never loses it: the page
// retries with backoff, says so, and replays the outbox when it is opened again.
(function () {
  "use strict";
  const root = document.querySelector("[data-rating]");
  if (!root) return;
  const editable = root.dataset.editable === "1";
  const storeKey = "minicex-outbox-" + root.dataset.assignment;
  const items = Array.from(root.querySelectorAll("fieldset.item"));
  const byId = new Map(items.map((el) => [el.dataset.item, el]));
  const submitBtn = document.getElementById("submit-btn");
  const banner = document.getElementById("sync-banner");
  const actionMsg = document.getElementById("action-msg");
  let outbox = {};
  try { outbox = JSON.parse(localStorage.getItem(storeKey) || "{}") || {}; } catch (e) { outbox = {}; }
  let lastSeq = Date.now();
  let retryDelay = 1000;
  let retryTimer = null;
  let sessionExpired = false;
  const inFlight = new Set();

  function nextSeq() { lastSeq = Math.max(lastSeq + 1, Date.now()); return lastSeq; }
  function persist() {
    try { localStorage.setItem(storeKey, JSON.stringify(outbox)); } catch (e) { /* storage full: still in memory */ }
  }
  function csrf() { const m = document.querySelector("meta[name=csrf-token]"); return m ? m.content : ""; }

  function setState(key, state, message) {
    const el = key === "comment" ? document.getElementById("dialogue-comment-state")
      : byId.get(String(key)) && byId.get(String(key)).querySelector(".save-state");
    if (!el) return;
    el.dataset.state = state;
    el.textContent = { saved: "Saved", saving: "Saving…", retrying: "Not saved yet, retrying…",
      failed: "Not saved: " + (message || "refused"), empty: "" }[state] || "";
    if (key !== "comment") byId.get(String(key)).classList.toggle("unsaved", state === "retrying" || state === "failed");
  }

  function currentValue(fieldset) {
    const checked = fieldset.querySelector("input[type=radio]:checked");
    return checked ? checked.value : "";
  }

  function refresh() {
    const answered = items.filter((el) => currentValue(el) !== "").length;
    const counter = document.getElementById("answered-count");
    if (counter) counter.textContent = answered;
    const pending = Object.keys(outbox).length;
    if (banner) {
      if (pending && sessionExpired) {
        banner.hidden = false;
        banner.textContent = "Your session has ended. Log in again in another tab: " + pending +
          " answer(s) are kept in this browser and will be sent automatically.";
      } else if (pending && (retryTimer || !navigator.onLine)) {
        banner.hidden = false;
        banner.textContent = pending + " answer(s) not saved yet" + (navigator.onLine ? "" : " (you are offline)") +
          ". They are kept in this browser and sent as soon as the server answers.";
      } else {
        banner.hidden = true;
      }
    }
    if (submitBtn) {
      const ready = answered === items.length && pending === 0;
      submitBtn.disabled = !ready;
      submitBtn.textContent = pending ? "Saving…" : (answered === items.length ? "Submit" : "Submit (" + (items.length - answered) + " left)");
    }
  }

  function scheduleRetry() {
    if (retryTimer) return;
    retryTimer = setTimeout(() => { retryTimer = null; flush(); }, retryDelay);
    retryDelay = Math.min(retryDelay * 2, 30000);
    refresh();
  }

  async function post(url, body) {
    return fetch(url, { method: "POST", credentials: "same-origin", headers: { "X-CSRFToken": csrf() },
      body: new URLSearchParams(body) });
  }

  async function send(key) {
    const entry = outbox[key];
    if (!entry || inFlight.has(key)) return;
    inFlight.add(key);
    setState(key, "saving");
    let response;
    try {
      response = key === "comment"
        ? await post(root.dataset.commentUrl, { comment: entry.comment })
        : await post(root.dataset.labelUrl, { item: entry.item, value: entry.value, comment: entry.comment, seq: entry.seq });
    } catch (e) {
      inFlight.delete(key);
      setState(key, "retrying");
      scheduleRetry();
      return;
    }
    inFlight.delete(key);
    const isJson = (response.headers.get("content-type") || "").includes("application/json");
    if (!isJson || response.status >= 500 || response.status === 429 || response.status === 408) {
      // Not JSON means a login page after a redirect: the session ended. Keep the answer and retry.
      sessionExpired = !isJson;
      setState(key, "retrying");
      scheduleRetry();
      return;
    }
    sessionExpired = false;
    const data = await response.json().catch(() => ({}));
    const current = outbox[key];
    if (response.ok) {
      if (current && current.seq === entry.seq) { delete outbox[key]; persist(); setState(key, "saved"); }
      retryDelay = 1000;
    } else {
      // Refused for good (4xx): retrying cannot help; show why and drop it.
      if (current && current.seq === entry.seq) { delete outbox[key]; persist(); }
      setState(key, "failed", data.detail);
    }
    if (outbox[key] && outbox[key].seq !== entry.seq) send(key); // a newer answer came in meanwhile
    refresh();
  }

  function flush() { Object.keys(outbox).forEach(send); refresh(); }

  function queueItem(fieldset) {
    const id = fieldset.dataset.item;
    const comment = fieldset.querySelector("textarea[data-comment-for]");
    outbox[id] = { item: id, value: currentValue(fieldset), comment: comment ? comment.value : "", seq: nextSeq() };
    persist();
    send(id);
    refresh();
  }

  // Restore answers the server has not confirmed yet (from an earlier visit or before a reload).
  Object.values(outbox).forEach((entry) => {
    if (!entry || !entry.item) return;
    const fieldset = byId.get(String(entry.item));
    if (!fieldset) { delete outbox[entry.item]; return; }
    const input = fieldset.querySelector('input[type=radio][value="' + entry.value + '"]');
    if (input) input.checked = true;
    const comment = fieldset.querySelector("textarea[data-comment-for]");
    if (comment && entry.comment !== undefined) comment.value = entry.comment;
    setState(entry.item, "retrying");
  });
  if (outbox.comment) {
    const dc = document.getElementById("dialogue-comment");
    if (dc) dc.value = outbox.comment.comment;
  }
  if (!editable) { outbox = {}; persist(); }

  // Active item and keyboard.
  let active = items.findIndex((el) => currentValue(el) === "");
  if (active < 0) active = 0;
  function activate(index, focus) {
    if (!items.length) return;
    active = Math.max(0, Math.min(items.length - 1, index));
    items.forEach((el, i) => el.classList.toggle("active", i === active));
    if (focus) { items[active].focus({ preventScroll: true }); items[active].scrollIntoView({ block: "nearest" }); }
  }
  activate(active, false);

  items.forEach((fieldset, index) => {
    fieldset.addEventListener("change", (event) => {
      if (event.target.type === "radio") { activate(index, false); queueItem(fieldset); }
    });
    fieldset.addEventListener("focusin", () => activate(index, false));
    const comment = fieldset.querySelector("textarea[data-comment-for]");
    if (comment) {
      let timer = null;
      comment.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => queueItem(fieldset), 600); });
      comment.addEventListener("blur", () => { clearTimeout(timer); if (comment.value !== (outbox[fieldset.dataset.item] || {}).comment) queueItem(fieldset); });
    }
  });

  const dialogueComment = document.getElementById("dialogue-comment");
  if (dialogueComment && editable) {
    let timer = null;
    const queue = () => { outbox.comment = { comment: dialogueComment.value, seq: nextSeq() }; persist(); send("comment"); };
    dialogueComment.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(queue, 600); });
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target.closest("textarea, input[type=text], dialog[open], select")) return;
    const key = event.key;
    if (key === "ArrowDown" || key === "j") { event.preventDefault(); activate(active + 1, true); return; }
    if (key === "ArrowUp" || key === "k") { event.preventDefault(); activate(active - 1, true); return; }
    if (key === "n") { event.preventDefault(); window.location.href = root.dataset.nextUrl; return; }
    if (/^[0-9]$/.test(key) && editable && items.length) {
      const input = items[active].querySelector('input[type=radio][value="' + key + '"]');
      if (!input) return;
      event.preventDefault();
      input.checked = true;
      queueItem(items[active]);
      activate(active + 1, true);
    }
  });

  async function action(url, body, onOk) {
    actionMsg.textContent = "";
    let response;
    try { response = await post(url, body); } catch (e) {
      actionMsg.textContent = "Could not reach the server; your answers are kept. Try again in a moment.";
      return;
    }
    const data = await response.json().catch(() => ({}));
    if (response.ok) onOk(data); else actionMsg.textContent = data.detail || "The server refused that.";
  }

  if (submitBtn) submitBtn.addEventListener("click", () => {
    if (Object.keys(outbox).length) return;
    action(root.dataset.submitUrl, {}, (data) => { window.location.href = data.next_url; });
  });

  function wireDialog(buttonId, dialogId, formId, fieldId, url, field, onOk) {
    const button = document.getElementById(buttonId);
    const dialog = document.getElementById(dialogId);
    if (!button || !dialog) return;
    button.addEventListener("click", () => dialog.showModal());
    dialog.querySelector("[data-close]").addEventListener("click", () => dialog.close());
    document.getElementById(formId).addEventListener("submit", (event) => {
      event.preventDefault();
      const text = document.getElementById(fieldId).value.trim();
      if (!text) { document.getElementById(fieldId).focus(); return; }
      dialog.close();
      action(url, { [field]: text }, onOk);
    });
  }
  wireDialog("skip-btn", "skip-dialog", "skip-form", "skip-reason", root.dataset.skipUrl, "reason",
    (data) => { window.location.href = data.next_url; });
  wireDialog("flag-btn", "flag-dialog", "flag-form", "flag-note", root.dataset.flagUrl, "note",
    () => { actionMsg.textContent = ""; window.location.reload(); });

  // Fine-grained privacy removal: map the selection back to offsets in the original text.
  const redactBtn = document.getElementById("redact-btn");
  if (redactBtn) redactBtn.addEventListener("click", async () => {
    const msg = document.getElementById("redact-msg");
    const sel = window.getSelection();
    if (!sel || sel.isCollapsed) { msg.textContent = "Select the words to hide in one turn first."; return; }
    const range = sel.getRangeAt(0);
    const startSpan = range.startContainer.parentElement && range.startContainer.parentElement.closest("span[data-off]");
    const endSpan = range.endContainer.parentElement && range.endContainer.parentElement.closest("span[data-off]");
    const place = startSpan && startSpan.closest("[data-field]");
    if (!startSpan || !endSpan || place !== endSpan.closest("[data-field]")) {
      msg.textContent = "Select text inside a single turn (not across turns or redacted parts).";
      return;
    }
    const start = Number(startSpan.dataset.off) + range.startOffset;
    const end = Number(endSpan.dataset.off) + range.endOffset;
    if (end <= start) { msg.textContent = "Select at least one character."; return; }
    const response = await post(root.dataset.redactUrl, { field: place.dataset.field, turn: place.dataset.turn || "",
      start: start, end: end }).catch(() => null);
    if (response && response.ok) { window.location.reload(); return; }
    const data = response ? await response.json().catch(() => ({})) : {};
    msg.textContent = data.detail || "Could not redact; try again.";
  });

  window.addEventListener("online", () => { retryDelay = 1000; flush(); });
  window.addEventListener("beforeunload", (event) => {
    if (Object.keys(outbox).length) { event.preventDefault(); event.returnValue = ""; }
  });
  flush();
})();
