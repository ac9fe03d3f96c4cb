// A column chooser for wide tables (templates/partials/column_chooser.html). The key columns always show; a column
// whose heading carries data-optional is hidden until the reader ticks it in the chooser (a <details> disclosure of
// checkboxes, used with the keyboard as any). The choice is kept per table in the browser: localStorage under
// "columns:" + the table's data-columns-key (else its id); tables sharing a key share the choice.
(function () {
  if (window.columnChooser) return;
  const gettext = window.gettext || ((text) => text);
  const interpolate = window.interpolate || ((text, values) => text.replace(/%\((\w+)\)s/g, (_, k) => values[k]));
  const PREFIX = "columns:";

  function read(key) {
    try { return JSON.parse(window.localStorage.getItem(PREFIX + key)) || {}; } catch (e) { return {}; }
  }
  function write(key, state) {
    try { window.localStorage.setItem(PREFIX + key, JSON.stringify(state)); } catch (e) { /* private mode: not kept */ }
  }
  function keyOf(table) { return table.dataset.columnsKey || table.id; }
  function headings(table) {
    const rows = table.tHead ? table.tHead.rows : [];
    return rows.length ? Array.from(rows[rows.length - 1].cells) : [];
  }
  // The column a cell starts in, counting the column spans before it (the tables chosen from have no row spans).
  function columnOf(cell) {
    let column = 0;
    for (let c = cell.previousElementSibling; c; c = c.previousElementSibling) column += c.colSpan || 1;
    return column;
  }
  function apply(table, state) {
    const hidden = new Set(headings(table).filter((th) => th.hasAttribute("data-optional") && !state[th.dataset.col])
      .map(columnOf));
    for (const row of table.rows) {
      for (const cell of row.cells) cell.hidden = hidden.has(columnOf(cell));
    }
    return hidden.size;
  }
  function sync(key) {
    const state = read(key);
    document.querySelectorAll("details[data-columns-for]").forEach((chooser) => {
      const table = document.getElementById(chooser.dataset.columnsFor);
      if (!table || keyOf(table) !== key) return;
      const n = apply(table, state);
      chooser.querySelectorAll("input[type=checkbox]").forEach((box) => { box.checked = !!state[box.value]; });
      const count = chooser.querySelector(".column-chooser-count");
      if (count) count.textContent = n ? " " + interpolate(gettext("(%(n)s hidden)"), {n: n}, true) : "";
    });
  }
  function setup(chooser) {
    const table = document.getElementById(chooser.dataset.columnsFor);
    if (!table || chooser.dataset.ready) return;
    chooser.dataset.ready = "1";
    const key = keyOf(table);
    const list = chooser.querySelector(".column-chooser-list");
    headings(table).filter((th) => th.hasAttribute("data-optional")).forEach((th) => {
      const item = document.createElement("li");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.value = th.dataset.col;
      box.id = `${chooser.dataset.columnsFor}-show-${th.dataset.col}`;
      const label = document.createElement("label");
      label.htmlFor = box.id;
      label.textContent = " " + th.textContent.replace(/\s+/g, " ").trim();
      box.addEventListener("change", () => {
        const state = read(key);
        state[box.value] = box.checked;
        write(key, state);
        sync(key);
      });
      item.append(box, label);
      list.append(item);
    });
    chooser.hidden = false;
    sync(key);
  }
  function scan(root) {
    (root || document).querySelectorAll("details[data-columns-for]").forEach(setup);
  }
  window.columnChooser = {scan: scan};
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => scan());
  else scan();
  document.addEventListener("htmx:afterSettle", (event) => scan(event.target));
})();
