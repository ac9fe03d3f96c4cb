// The rating page. Saving (every click posted at once, unconfirmed answers kept in a localStorage outbox and
// retried with backoff) is the shared answer sheet in static/js/answer_sheet.js; this adds the rating keys, the
// submit, skip and flag actions and the fine-grained privacy redaction.
(function () {
  "use strict";
  const root = document.querySelector("[data-rating]");
  if (!root) return;
  const sheet = window.AnswerSheet(root, {
    fieldsets: "fieldset.item", idKey: "item", valueKey: "value", saveUrlKey: "labelUrl",
    storeKey: "minicex-outbox-" + root.dataset.assignment, commentId: "dialogue-comment",
  });
  const { submitBtn, actionMsg, post, action } = sheet;

  // Keys: 0-9 answer the active item and move on; j/k or arrows move; n goes to the next dialogue.
  document.addEventListener("keydown", (event) => {
    if (sheet.commonKey(event)) return;
    if (/^[0-9]$/.test(event.key) && sheet.answerActive(event.key)) event.preventDefault();
  });

  if (submitBtn) submitBtn.addEventListener("click", () => {
    if (sheet.pending()) return;
    action(root.dataset.submitUrl, {}, (data) => { window.location.href = data.next_url; });
  });

  sheet.wireDialog("skip-btn", "skip-dialog", "skip-form", "skip-reason", root.dataset.skipUrl, "reason",
    (data) => { window.location.href = data.next_url; });
  sheet.wireDialog("flag-btn", "flag-dialog", "flag-form", "flag-note", root.dataset.flagUrl, "note",
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
})();
