// lidframe report: sort any table.sortable by clicking a column header.
// Numeric columns (th data-type="number") sort by each cell's data-sort value as a number;
// others as text (numeric-aware). Empty values (not computed) go last in either direction.
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
