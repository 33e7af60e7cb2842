// lidframe report: sort any table.sortable by clicking a column header, and keep every table inside its box.
// Numeric columns (th data-type="number") sort by each cell's data-sort value as a number;
// others as text (numeric-aware). Empty values (not computed) go last in either direction.
// A table wider than its box (.table-wrap), at this window's width, is set in a smaller type
// ("compact"), and where that is still too wide "stacked" (report.css): one block per row, each
// value under the name of its column (data-title, set here from the header rows, column spans
// counted). Tables are laid out again whenever the window's width changes, and when an appendix opens.
(function () {
  "use strict";
  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

  function valueOf(cell, numeric) {
    var raw = cell.getAttribute("data-sort");
    if (raw === null) raw = cell.textContent.trim();
    if (raw === "") return null;
    if (!numeric) return raw;
    var number = Number(raw);
    return isNaN(number) ? null : number;
  }

  function sortRows(table, column, direction) {
    var body = table.tBodies[0];
    var numeric = table.tHead.rows[0].cells[column].getAttribute("data-type") === "number";
    var sign = direction === "ascending" ? 1 : -1;
    var rows = Array.prototype.map.call(body.rows, function (row, index) {
      return { row: row, index: index, value: valueOf(row.cells[column], numeric) };
    });
    rows.sort(function (a, b) {
      if (a.value === null || b.value === null) {
        if (a.value === b.value) return a.index - b.index;
        return a.value === null ? 1 : -1;
      }
      var order = numeric ? (a.value < b.value ? -1 : a.value > b.value ? 1 : 0) : collator.compare(a.value, b.value);
      return order !== 0 ? sign * order : a.index - b.index;
    });
    rows.forEach(function (entry) { body.appendChild(entry.row); });
  }

  function columnTitles(table) {
    // the text of every header cell over each column, header rows and column spans counted
    var titles = [];
    if (!table.tHead) return titles;
    Array.prototype.forEach.call(table.tHead.rows, function (row) {
      var column = 0;
      Array.prototype.forEach.call(row.cells, function (th) {
        while (titles[column] && titles[column].taken > row.rowIndex) column += 1;
        var text = (th.innerText || th.textContent).replace(/\s+/g, " ").trim();
        var span = th.colSpan || 1;
        for (var k = 0; k < span; k += 1) {
          var entry = titles[column + k] || (titles[column + k] = { parts: [], taken: 0 });
          if (text) entry.parts.push(text);
          entry.taken = row.rowIndex + (th.rowSpan || 1);
        }
        column += span;
      });
    });
    return titles.map(function (entry) { return entry ? entry.parts.join(" · ") : ""; });
  }

  function label(table) {
    // data-title on every body cell that has none: what stacked rows show above each value
    var titles = columnTitles(table);
    Array.prototype.forEach.call(table.tBodies, function (body) {
      Array.prototype.forEach.call(body.rows, function (row) {
        var column = 0;
        Array.prototype.forEach.call(row.cells, function (cell) {
          if (!cell.hasAttribute("data-title") && titles[column]) cell.setAttribute("data-title", titles[column]);
          column += cell.colSpan || 1;
        });
      });
    });
  }

  function fit() {
    // as a table if it fits; else in a smaller type; else stacked
    Array.prototype.forEach.call(document.querySelectorAll(".table-wrap"), function (wrap) {
      wrap.classList.remove("compact", "stacked");
      if (wrap.scrollWidth <= wrap.clientWidth + 1) return;
      wrap.classList.add("compact");
      if (wrap.scrollWidth <= wrap.clientWidth + 1) return;
      wrap.classList.remove("compact");
      wrap.classList.add("stacked");
    });
  }

  Array.prototype.forEach.call(document.querySelectorAll(".table-wrap table"), label);
  fit();
  var width = window.innerWidth;
  var pending = null;
  function refit() {
    pending = null;
    if (window.innerWidth === width) return;
    width = window.innerWidth;
    fit();
  }
  window.addEventListener("resize", function () {
    if (pending === null) pending = window.setTimeout(refit, 60);
  });
  window.addEventListener("load", function () {
    width = -1;
    refit();
  });

  // the appendices (<details>): a table laid out while its appendix was closed is laid out again when
  // it opens; a link to an appendix (or into one) opens it; printing opens every one, and closes again
  // those that were closed on screen
  document.addEventListener("toggle", function (event) {
    if (event.target.tagName === "DETAILS" && event.target.open) fit();
  }, true);
  function openTarget() {
    var target = window.location.hash ? document.getElementById(window.location.hash.slice(1)) : null;
    if (!target) return;
    var inner = target.querySelector(":scope > details");
    if (inner) inner.open = true;
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") node.open = true;
    }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
  var closedForPrint = [];
  window.addEventListener("beforeprint", function () {
    closedForPrint = Array.prototype.filter.call(document.querySelectorAll("details"), function (d) { return !d.open; });
    closedForPrint.forEach(function (d) { d.open = true; });
  });
  window.addEventListener("afterprint", function () {
    closedForPrint.forEach(function (d) { d.open = false; });
    closedForPrint = [];
  });

  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var headers = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(headers, function (th, column) {
      var button = th.querySelector("button");
      if (!button) return;
      button.addEventListener("click", function () {
        var next = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
        Array.prototype.forEach.call(headers, function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", next);
        sortRows(table, column, next);
      });
    });
  });
})();
