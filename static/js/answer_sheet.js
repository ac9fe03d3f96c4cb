// The one answer-keeping engine of every page a physician or panelist answers on: the rating page
// (static/js/rating.js), the preference comparison page (static/js/compare.js) and the Delphi questionnaire
// (static/js/delphi.js). Every click is posted at once. Until the server confirms it, the answer waits in an
// outbox kept in localStorage, so a network failure, a server error or a closed tab never loses it: the page
// retries with backoff, says so, sends the outbox again when the connection comes back and replays it when the
// page is opened again. The server keeps one answer per item (a repeated send overwrites it with the same value),
// so an answer sent twice is stored once.
//
// AnswerSheet(root, options) wires the fieldsets, their comments and the page comment, and returns what the page
// script needs for its own keyboard shortcuts and buttons. Options (what differs between the pages):
//   fieldsets     selector of the answer fieldsets inside root ("fieldset.item")
//   idKey         dataset key of a fieldset and payload field naming it ("item")
//   valueKey      payload field holding the chosen radio value ("value")
//   storeKey      localStorage key of the outbox
//   saveUrlKey    root dataset key of the URL answers are posted to ("labelUrl"); a fieldset's own data-save-url
//                 wins (the Delphi questionnaire posts each item to its own address)
//   commentId     id of the page comment textarea; its save state is "<commentId>-state"
//   submitLabel   function (button, text) writing the submit button label (default: button.textContent = text)
// Text fields of an answer: a textarea with data-comment-for is sent as "comment", one with data-answer-field="name"
// as "name" (the Delphi questionnaire's comment and proposed rewording).
// #answered-count counts the answers the server has stored (an answer waiting in the outbox is not counted there);
// #waiting-count, when present, says "n waiting" while any wait.
// On a touch screen, the first answer to an item brings the next one into view.
// An element #work-status with data-started and data-ready phrases follows the answers: "In progress" after the
// first answer of a task not started, data-ready once every needed answer is saved.
// A fieldset with data-optional (a free-text item) is saved like the others but never needed for submitting.
// The words it shows are the page language's (gettext, the JavaScript catalogue base.html loads); a page's JSON block
// #ui-text (annotation/ui_text.py: the rating pages' own language switch) overrides them.
(function () {
  "use strict";
  const _ = window.gettext || ((text) => text);
  const WORDS = {
    saved: _("Saved"), saving: _("Saving…"), retrying: _("Not saved yet, retrying…"), waiting: _("Waiting to send"),
    failed: _("Not saved: {reason}"),
    refused: _("refused"), submit: _("Submit"), submit_left: _("Submit ({n} left)"),
    n_waiting: _("{n} waiting"),
    leave_unsubmitted: _("Every item is answered but this is not submitted yet. Leave it unsubmitted?"),
    session_ended:
      _("Your session has ended. Log in again in another tab: {n} answer(s) are kept in this browser and will be sent automatically."),
    pending: _("{n} answer(s) not saved yet. They are kept in this browser and sent as soon as the server answers."),
    waiting_offline:
      _("{n} answer(s) waiting to send: you are offline. They are kept in this browser and sent when the connection is back."),
    unreachable: _("Could not reach the server; your answers are kept. Try again in a moment."),
    server_refused: _("The server refused that."),
  };
  // The phrase `key` with its {placeholders} filled from `values`.
  window.uiText = function (key, values) {
    if (!window.uiText.table) {
      let own = {};
      const block = document.getElementById("ui-text");
      try { own = block ? JSON.parse(block.textContent) : {}; } catch (e) { own = {}; }
      window.uiText.table = Object.assign({}, WORDS, own);
    }
    const text = window.uiText.table[key] !== undefined ? window.uiText.table[key] : key;
    return text.replace(/\{(\w+)\}/g, (whole, name) => (values && name in values ? String(values[name]) : whole));
  };
  const t = window.uiText;
  // True when a key belongs to what the user is typing: in a text field (an on-screen keyboard types there) or while
  // an input method composes a character (Chinese). Page shortcuts must leave such keys alone.
  window.typingInField = function (event) {
    if (event.isComposing || event.keyCode === 229) return true;
    const target = event.target;
    return Boolean(target && target.closest && (target.isContentEditable ||
      target.closest("textarea, select, input:not([type=radio]):not([type=checkbox]):not([type=button]):not([type=submit])")));
  };
  window.AnswerSheet = function (root, options) {
    const idKey = options.idKey;
    const valueKey = options.valueKey;
    const storeKey = options.storeKey;
    const editable = root.dataset.editable === "1";
    const items = Array.from(root.querySelectorAll(options.fieldsets));
    const required = items.filter((el) => !el.hasAttribute("data-optional"));
    const byId = new Map(items.map((el) => [el.dataset[idKey], el]));
    const submitBtn = document.getElementById("submit-btn");
    const banner = document.getElementById("sync-banner");
    const actionMsg = document.getElementById("action-msg");
    const submitLabel = options.submitLabel || ((button, text) => { button.textContent = text; });
    let outbox = {};
    try { outbox = JSON.parse(localStorage.getItem(storeKey) || "{}") || {}; } catch (e) { outbox = {}; }
    let lastSeq = Date.now();
    let retryDelay = 1000;
    let retryTimer = null;
    let sessionExpired = false;
    const inFlight = new Set();
    const refused = new Set(); // items whose last answer the server refused: shown, not counted as stored
    const touch = Boolean(window.matchMedia && window.matchMedia("(pointer: coarse)").matches);

    function nextSeq() { lastSeq = Math.max(lastSeq + 1, Date.now()); return lastSeq; }
    function persist() {
      try { localStorage.setItem(storeKey, JSON.stringify(outbox)); } catch (e) { /* storage full: still in memory */ }
    }
    function csrf() { const m = document.querySelector("meta[name=csrf-token]"); return m ? m.content : ""; }

    function setState(key, state, message) {
      const el = key === "comment" ? document.getElementById(options.commentId + "-state")
        : byId.get(String(key)) && byId.get(String(key)).querySelector(".save-state");
      if (!el) return;
      el.dataset.state = state;
      el.textContent = state === "failed" ? t("failed", { reason: message || t("refused") })
        : (state === "empty" || !state ? "" : t(state));
      if (key !== "comment") {
        byId.get(String(key)).classList.toggle("unsaved", ["retrying", "waiting", "failed"].includes(state));
      }
    }

    function currentValue(fieldset) {
      const checked = fieldset.querySelector("input[type=radio]:checked");
      return checked ? checked.value : "";
    }

    // The free-text fields of an answer, as [name posted under, textarea].
    function textFields(fieldset) {
      return Array.from(fieldset.querySelectorAll("textarea[data-comment-for], textarea[data-answer-field]"))
        .map((area) => [area.dataset.answerField || "comment", area]);
    }

    function refresh() {
      const answered = required.filter((el) => currentValue(el) !== "").length;
      const stored = required.filter((el) => currentValue(el) !== "" && !outbox[el.dataset[idKey]] &&
        !refused.has(el.dataset[idKey])).length;
      const counter = document.getElementById("answered-count");
      if (counter) counter.textContent = stored;
      const pending = Object.keys(outbox).length;
      const waiting = document.getElementById("waiting-count");
      if (waiting) { waiting.hidden = !pending; waiting.textContent = pending ? t("n_waiting", { n: pending }) : ""; }
      if (banner) {
        if (pending && sessionExpired) {
          banner.hidden = false;
          banner.textContent = t("session_ended", { n: pending });
        } else if (pending && !navigator.onLine) {
          banner.hidden = false;
          banner.textContent = t("waiting_offline", { n: pending });
        } else if (pending && retryTimer) {
          banner.hidden = false;
          banner.textContent = t("pending", { n: pending });
        } else {
          banner.hidden = true;
        }
      }
      const status = document.getElementById("work-status");
      if (status && status.dataset.ready && editable) {
        if (status.dataset.initial === undefined) status.dataset.initial = status.textContent;
        status.textContent = answered === required.length && pending === 0 ? status.dataset.ready
          : (answered && status.dataset.status === "assigned" ? status.dataset.started : status.dataset.initial);
      }
      if (submitBtn) {
        const ready = answered === required.length && pending === 0;
        submitBtn.disabled = !ready;
        submitLabel(submitBtn, pending ? t("saving")
          : (answered === required.length ? t("submit") : t("submit_left", { n: required.length - answered })));
      }
    }

    function scheduleRetry() {
      if (retryTimer) return;
      retryTimer = setTimeout(() => { retryTimer = null; flush(); }, retryDelay);
      retryDelay = Math.min(retryDelay * 2, 30000);
      refresh();
    }

    async function post(url, body) {
      return fetch(url, { method: "POST", credentials: "same-origin", headers: { "X-CSRFToken": csrf(), Accept: "application/json" },
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
          : await post(saveUrl(entry), Object.assign({}, entry.texts || { comment: entry.comment },
            { [idKey]: entry[idKey], [valueKey]: entry[valueKey], seq: entry.seq }));
      } catch (e) {
        inFlight.delete(key);
        setState(key, navigator.onLine ? "retrying" : "waiting");
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
        if (current && current.seq === entry.seq) {
          delete outbox[key]; refused.delete(key); persist(); setState(key, "saved");
        }
        retryDelay = 1000;
      } else {
        // Refused for good (4xx): retrying cannot help; show why and drop it.
        if (current && current.seq === entry.seq) { delete outbox[key]; refused.add(key); persist(); }
        setState(key, "failed", data.detail);
      }
      if (outbox[key] && outbox[key].seq !== entry.seq) send(key); // a newer answer came in meanwhile
      refresh();
    }

    function flush() { Object.keys(outbox).forEach(send); refresh(); }

    function saveUrl(entry) {
      const fieldset = byId.get(String(entry[idKey]));
      return (fieldset && fieldset.dataset.saveUrl) || root.dataset[options.saveUrlKey];
    }

    function queue(fieldset) {
      const id = fieldset.dataset[idKey];
      const texts = Object.fromEntries(textFields(fieldset).map(([name, area]) => [name, area.value]));
      outbox[id] = { [idKey]: id, [valueKey]: currentValue(fieldset), texts: texts, seq: nextSeq() };
      persist();
      send(id);
      refresh();
    }

    // Restore answers the server has not confirmed yet (from an earlier visit or before a reload).
    Object.values(outbox).forEach((entry) => {
      if (!entry || !entry[idKey]) return;
      const fieldset = byId.get(String(entry[idKey]));
      if (!fieldset) { delete outbox[entry[idKey]]; return; }
      const input = fieldset.querySelector('input[type=radio][value="' + entry[valueKey] + '"]');
      if (input) input.checked = true;
      const texts = entry.texts || { comment: entry.comment };
      textFields(fieldset).forEach(([name, area]) => { if (texts[name] !== undefined) area.value = texts[name]; });
      setState(entry[idKey], navigator.onLine ? "retrying" : "waiting");
    });
    const pageComment = document.getElementById(options.commentId);
    if (outbox.comment && pageComment) pageComment.value = outbox.comment.comment;
    if (!editable) { outbox = {}; persist(); }

    // The active fieldset (the one keyboard shortcuts answer).
    let active = items.findIndex((el) => !el.hasAttribute("data-optional") && currentValue(el) === "");
    if (active < 0) active = 0;
    function activate(index, focus) {
      if (!items.length) return;
      active = Math.max(0, Math.min(items.length - 1, index));
      items.forEach((el, i) => el.classList.toggle("active", i === active));
      if (focus) { items[active].focus({ preventScroll: true }); items[active].scrollIntoView({ block: "nearest" }); }
    }
    activate(active, false);

    // On a touch screen, the first answer to an item brings the next item into view (a phone shows two or three
    // items at a time, and a tap does not move the page on by itself).
    function showNext(index) {
      const next = items[index + 1];
      if (!next) return;
      activate(index + 1, false);
      const box = next.getBoundingClientRect();
      if (box.top >= 0 && box.bottom <= window.innerHeight) return;
      next.scrollIntoView({ block: "center" });
    }

    items.forEach((fieldset, index) => {
      let answered = currentValue(fieldset) !== "";
      fieldset.addEventListener("change", (event) => {
        if (event.target.type !== "radio") return;
        activate(index, false);
        queue(fieldset);
        if (touch && !answered) showNext(index);
        answered = true;
      });
      fieldset.addEventListener("focusin", () => activate(index, false));
      textFields(fieldset).forEach(([, area]) => {
        let timer = null;
        let typed = false;
        const save = () => { clearTimeout(timer); if (typed) { typed = false; queue(fieldset); } };
        area.addEventListener("input", () => { typed = true; clearTimeout(timer); timer = setTimeout(save, 600); });
        area.addEventListener("blur", save);
      });
    });

    if (pageComment && editable) {
      let timer = null;
      const queueComment = () => { outbox.comment = { comment: pageComment.value, seq: nextSeq() }; persist(); send("comment"); };
      pageComment.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(queueComment, 600); });
    }

    // Posts a page action (submit, skip, flag); calls onOk with the JSON answer. Resolves to whether it worked.
    async function action(url, body, onOk) {
      actionMsg.textContent = "";
      let response;
      try { response = await post(url, body); } catch (e) {
        actionMsg.textContent = t("unreachable");
        return false;
      }
      const data = await response.json().catch(() => ({}));
      if (response.ok) { onOk(data); return true; }
      actionMsg.textContent = data.detail || t("server_refused");
      return false;
    }

    // Keys both pages share: j/k or arrows move between fieldsets, n goes to the next task. Returns true when the
    // event is handled here or must be left alone (a modifier is held, or the user is typing), so the page script
    // only handles its own answer keys.
    function commonKey(event) {
      if (event.ctrlKey || event.metaKey || event.altKey) return true;
      if (window.typingInField(event)) return true;
      if (event.target.closest("dialog[open]")) return true;
      const key = event.key;
      if (key === "ArrowDown" || key === "j") { event.preventDefault(); activate(active + 1, true); return true; }
      if (key === "ArrowUp" || key === "k") { event.preventDefault(); activate(active - 1, true); return true; }
      if (key === "n" && root.dataset.nextUrl) {
        event.preventDefault();
        // An answered dialogue not yet submitted is left only when the rater says so (its answers stay saved).
        if (submitBtn && !submitBtn.disabled && !window.confirm(t("leave_unsubmitted"))) return true;
        window.location.href = root.dataset.nextUrl;
        return true;
      }
      return false;
    }

    // Answers fieldset number index with value and saves it (staying there); false if it cannot.
    function choose(index, value) {
      if (!editable || !items[index]) return false;
      const input = items[index].querySelector('input[type=radio][value="' + value + '"]');
      if (!input || input.disabled) return false;
      input.checked = true;
      queue(items[index]);
      return true;
    }

    // Answers the active fieldset with value (from a keyboard shortcut) and moves on; false if it cannot.
    function answerActive(value) {
      if (!items.length || !choose(active, value)) return false;
      activate(active + 1, true);
      return true;
    }

    // A <dialog> opened by a button whose form posts one required text field as a page action.
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

    window.addEventListener("online", () => { retryDelay = 1000; flush(); });
    window.addEventListener("offline", refresh);
    window.addEventListener("beforeunload", (event) => {
      if (Object.keys(outbox).length) { event.preventDefault(); event.returnValue = ""; }
    });
    flush();

    return {
      root: root,
      editable: editable,
      items: items,
      submitBtn: submitBtn,
      actionMsg: actionMsg,
      get active() { return active; },
      activate: activate,
      pending: () => Object.keys(outbox).length,
      get outbox() { return outbox; },
      queue: queue,
      flush: flush,
      post: post,
      action: action,
      commonKey: commonKey,
      answerActive: answerActive,
      choose: choose,
      currentValue: currentValue,
      wireDialog: wireDialog,
    };
  };
})();
