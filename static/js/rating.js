// The rating page. Saving (every click posted at once, unconfirmed answers kept in a localStorage outbox and
// retried with backoff) is the shared answer sheet in static/js/answer_sheet.js; this adds the rating keys, the
// submit, skip and flag actions and the fine-grained privacy redaction.
(function () {
  "use strict";
  const gettext = window.gettext || ((text) => text);
  const root = document.querySelector("[data-rating]");
  if (!root) return;
  const sheet = window.AnswerSheet(root, {
    fieldsets: "fieldset.item", idKey: "item", valueKey: "value", saveUrlKey: "labelUrl",
    storeKey: "minicex-outbox-" + root.dataset.assignment, commentId: "dialogue-comment",
  });
  const { submitBtn, actionMsg, post, action } = sheet;

  // Keys: 0-9 answer the active item and move on; j/k or up/down move; n goes to the next dialogue.
  // Scales reaching 10 or more take two digits ("1" then "0" = 10), and scales in steps such as 0.5 take a point
  // and its decimals ("4" "." "5" = 4.5): a typed point that can still grow into another point waits a moment for
  // the next key (its value is already saved) before moving on. Left/right step a scale or levels item.
  // Enter writes in a free-text item, Escape leaves its box; elsewhere Enter submits a dialogue whose every item is
  // answered and saved (what the Submit button does, under the same rule: not while an answer waits).
  const DIGIT_WAIT_MS = 1000;
  let typed = null; // {index, text, timer}: keys typed on a multi-key scale

  function settle() {
    if (!typed) return;
    clearTimeout(typed.timer);
    typed = null;
  }

  function moveOn(index) {
    if (sheet.active === index) sheet.activate(index + 1, true);
  }

  function points(fieldset) {
    return (fieldset.dataset.points || "").split(" ").filter(Boolean);
  }

  // A scale needs more than one key per point when some point's text is longer than one character.
  function multiKey(fieldset) {
    return points(fieldset).some((point) => point.replace("-", "").length > 1);
  }

  function typeKey(fieldset, key) {
    const index = sheet.active;
    const all = points(fieldset);
    const grows = (text) => all.some((point) => point.length > text.length && point.startsWith(text));
    const before = typed && typed.index === index ? typed.text : "";
    let text = before + (key === "," ? "." : key);
    if (!all.includes(text) && !grows(text)) {
      if (before && all.includes(before)) {
        // "4" then "5" on a half-point scale: 4 stands, and the 5 answers the next item.
        settle();
        moveOn(index);
        return sheet.active !== index ? answerKey(key) : false;
      }
      text = key === "," ? "." : key; // this key starts a new point
    }
    settle();
    const chosen = all.includes(text) ? sheet.choose(index, text) : false;
    if (grows(text)) {
      typed = { index: index, text: text, timer: setTimeout(() => { typed = null; if (chosen) moveOn(index); },
        DIGIT_WAIT_MS) };
      return true;
    }
    if (chosen) moveOn(index);
    return chosen;
  }

  function step(fieldset, delta) {
    const inputs = Array.from(fieldset.querySelectorAll("input[type=radio]"));
    if (!inputs.length) return false;
    const at = inputs.findIndex((input) => input.checked);
    const next = at < 0 ? (delta > 0 ? 0 : inputs.length - 1) : Math.max(0, Math.min(inputs.length - 1, at + delta));
    return sheet.choose(sheet.active, inputs[next].value);
  }

  document.addEventListener("keydown", (event) => {
    const box = event.target.closest && event.target.closest("fieldset.text-item textarea");
    if (box && event.key === "Escape") { event.preventDefault(); box.closest("fieldset").focus(); return; }
    if (sheet.commonKey(event)) { settle(); return; }
    const fieldset = sheet.items[sheet.active];
    if (!fieldset) return;
    const type = fieldset.dataset.type;
    if (type === "text" && event.key === "Enter") {
      const area = fieldset.querySelector("textarea");
      if (area && !area.disabled) { event.preventDefault(); area.focus(); }
      return;
    }
    if (event.key === "Enter" && !event.target.closest("button, a, summary")) {
      event.preventDefault();
      submit();
      return;
    }
    if ((event.key === "ArrowLeft" || event.key === "ArrowRight") && (type === "scale" || type === "ordinal")) {
      settle();
      if (step(fieldset, event.key === "ArrowRight" ? 1 : -1)) event.preventDefault();
      return;
    }
    if (answerKey(event.key)) event.preventDefault();
  });

  // A digit (or a decimal point on a scale in steps) answers the active item.
  function answerKey(key) {
    const fieldset = sheet.items[sheet.active];
    if (!fieldset) return false;
    if (fieldset.dataset.type === "scale" && multiKey(fieldset) && /^[0-9.,]$/.test(key)) return typeKey(fieldset, key);
    if (!/^[0-9]$/.test(key)) return false;
    settle();
    return sheet.answerActive(key);
  }

  let submitting = false;
  function submit() {
    if (!submitBtn || submitBtn.disabled || submitting || sheet.pending()) return;
    submitting = true;
    action(root.dataset.submitUrl, {}, (data) => { window.location.href = data.next_url; })
      .then((ok) => { if (!ok) submitting = false; });
  }
  if (submitBtn) submitBtn.addEventListener("click", submit);

  sheet.wireDialog("skip-btn", "skip-dialog", "skip-form", "skip-reason", root.dataset.skipUrl, "reason",
    (data) => { window.location.href = data.next_url; });
  sheet.wireDialog("flag-btn", "flag-dialog", "flag-form", "flag-note", root.dataset.flagUrl, "note",
    () => { actionMsg.textContent = ""; window.location.reload(); });

  // Fine-grained privacy removal: map the selection back to offsets in the original text.
  const redactBtn = document.getElementById("redact-btn");
  if (redactBtn) redactBtn.addEventListener("click", async () => {
    const msg = document.getElementById("redact-msg");
    const sel = window.getSelection();
    if (!sel || sel.isCollapsed) { msg.textContent = gettext("Select the words to hide in one turn first."); return; }
    const range = sel.getRangeAt(0);
    const startSpan = range.startContainer.parentElement && range.startContainer.parentElement.closest("span[data-off]");
    const endSpan = range.endContainer.parentElement && range.endContainer.parentElement.closest("span[data-off]");
    const place = startSpan && startSpan.closest("[data-field]");
    if (!startSpan || !endSpan || place !== endSpan.closest("[data-field]")) {
      msg.textContent = gettext("Select text inside a single turn (not across turns or redacted parts).");
      return;
    }
    const start = Number(startSpan.dataset.off) + range.startOffset;
    const end = Number(endSpan.dataset.off) + range.endOffset;
    if (end <= start) { msg.textContent = gettext("Select at least one character."); return; }
    const response = await post(root.dataset.redactUrl, { field: place.dataset.field, turn: place.dataset.turn || "",
      start: start, end: end }).catch(() => null);
    if (response && response.ok) { window.location.reload(); return; }
    const data = response ? await response.json().catch(() => ({})) : {};
    msg.textContent = data.detail || gettext("Could not redact; try again.");
  });
})();
