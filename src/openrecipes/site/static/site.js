// OpenRecipes pages: copy buttons, sortable and filterable tables, and the compare page.
// Recipe text is only ever put into the page with textContent, never parsed as HTML.
(function () {
  "use strict";

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    // Plain-http hosts have no async clipboard: fall back to a selected, off-screen textarea.
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "offscreen";
    document.body.appendChild(area);
    area.select();
    var copied = document.execCommand("copy");
    document.body.removeChild(area);
    return copied ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  function initCopyButtons() {
    document.querySelectorAll("button.copy[data-copy]").forEach(function (button) {
      button.addEventListener("click", function () {
        var source = document.getElementById(button.getAttribute("data-copy"));
        copyText(source.textContent).then(function () {
          button.textContent = "Copied";
        }, function () {
          button.textContent = "Select and copy";
        });
        window.setTimeout(function () { button.textContent = "Copy"; }, 2000);
      });
    });
  }

  function cellValue(row, column, numeric) {
    var cell = row.cells[column];
    var raw = cell.hasAttribute("data-value") ? cell.getAttribute("data-value") : cell.textContent.trim();
    return numeric ? parseFloat(raw) : raw.toLowerCase();
  }

  // The address carries a page's filters and sort (?evidence=re-derived&sort=usd-asc): a shared or reloaded link
  // restores them. Each control names its key (data-address); keys this script does not own are kept as they are.
  function writeAddress(key, value) {
    if (window.location.protocol === "file:") { return; }  // a file:// page cannot change its own address
    var params = new URLSearchParams(window.location.search);
    if (value) { params.set(key, value); } else { params.delete(key); }
    var query = params.toString();
    window.history.replaceState(window.history.state, "",
      window.location.pathname + (query ? "?" + query : "") + window.location.hash);
  }

  function initAddressControls() {
    var params = new URLSearchParams(window.location.search);
    document.querySelectorAll("input[data-address], select[data-address]").forEach(function (control) {
      var key = control.getAttribute("data-address");
      var event = control.tagName === "SELECT" ? "change" : "input";
      var wanted = params.get(key);
      // A value a select does not offer is ignored: the control keeps its default.
      if (wanted !== null && (control.tagName !== "SELECT" ||
          Array.prototype.some.call(control.options, function (o) { return o.value === wanted; }))) {
        control.value = wanted;
        control.dispatchEvent(new Event(event));
      }
      control.addEventListener(event, function () { writeAddress(key, control.value); });
    });
  }

  function initSortableTables() {
    var params = new URLSearchParams(window.location.search);
    document.querySelectorAll("table.sortable").forEach(function (table) {
      var headers = table.tHead.rows[0].cells;
      var addressKey = table.getAttribute("data-address-sort");
      Array.prototype.forEach.call(headers, function (header, column) {
        var kind = header.getAttribute("data-sort");
        if (!kind) { return; }
        header.tabIndex = 0;
        header.classList.add("sortable-head");
        function sort() {
          // The first click puts the best first: descending where higher is better (tokens/s), ascending where
          // lower is better ($ / 1M tokens), as the header's data-first says; later clicks reverse.
          var current = header.getAttribute("aria-sort");
          sortBy(current ? current !== "ascending" : header.getAttribute("data-first") !== "desc");
          if (addressKey && header.hasAttribute("data-key")) {
            writeAddress(addressKey, header.getAttribute("data-key") + "-" +
              (header.getAttribute("aria-sort") === "ascending" ? "asc" : "desc"));
          }
        }
        function sortBy(ascending) {
          Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
          header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
          var body = table.tBodies[0];
          var rows = Array.prototype.slice.call(body.rows);
          rows.sort(function (x, y) {
            var a = cellValue(x, column, kind === "num"), b = cellValue(y, column, kind === "num");
            return (a < b ? -1 : a > b ? 1 : 0) * (ascending ? 1 : -1);
          });
          rows.forEach(function (row) { body.appendChild(row); });
        }
        header.addEventListener("click", sort);
        var wanted = addressKey && params.get(addressKey);
        if (wanted && header.hasAttribute("data-key") && (wanted === header.getAttribute("data-key") + "-asc" ||
            wanted === header.getAttribute("data-key") + "-desc")) {
          sortBy(wanted.slice(-4) === "-asc");
        }
        header.addEventListener("keydown", function (event) {
          if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(); }
        });
      });
    });
  }

  function initFilters() {
    // A table's text filter and its evidence select apply together: a row shows when it matches both.
    function apply(table) {
      var input = document.querySelector('input[data-filter="' + table.id + '"]');
      var select = document.querySelector('select[data-evidence-filter="' + table.id + '"]');
      var words = input ? input.value.toLowerCase().split(/\s+/).filter(Boolean) : [];
      var level = select ? select.value : "";
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var text = row.textContent.toLowerCase();
        row.hidden = !words.every(function (word) { return text.indexOf(word) !== -1; }) ||
          (level !== "" && row.getAttribute("data-evidence") !== level);
      });
    }
    document.querySelectorAll("input[data-filter], select[data-evidence-filter]").forEach(function (control) {
      var table = document.getElementById(control.getAttribute("data-filter") ||
                                          control.getAttribute("data-evidence-filter"));
      control.addEventListener(control.tagName === "SELECT" ? "change" : "input", function () { apply(table); });
    });
  }

  function initRecordFilters() {
    // The public record's filters (precision, GPU count, engine) are hidden until this script runs: without it,
    // every row shows. A row shows when it matches every chosen value.
    document.querySelectorAll("[data-record-filters]").forEach(function (tools) {
      var table = document.getElementById(tools.getAttribute("data-record-filters"));
      var selects = tools.querySelectorAll("select[data-record-filter]");
      var count = tools.querySelector("[data-record-count]");
      function apply() {
        var shown = 0, rows = table.tBodies[0].rows;
        Array.prototype.forEach.call(rows, function (row) {
          row.hidden = !Array.prototype.every.call(selects, function (select) {
            return select.value === "" ||
              row.getAttribute("data-" + select.getAttribute("data-record-filter")) === select.value;
          });
          if (!row.hidden) { shown += 1; }
        });
        count.textContent = shown + " of " + rows.length + " runs shown";
      }
      selects.forEach(function (select) { select.addEventListener("change", apply); });
      tools.hidden = false;
      apply();
    });
  }

  // --- compare page -------------------------------------------------------------------------------------------
  var records = {};
  var waiting = {};
  window.openrecipesCompare = {
    receive: function (record) {
      records[record.slug] = record;
      (waiting[record.slug] || []).forEach(function (done) { done(record); });
      delete waiting[record.slug];
    }
  };

  function sitePath(base, path) {
    return base + path.split("/").map(encodeURIComponent).join("/");
  }

  // A site path with a fragment (a page's row): the path encoded, the fragment kept a fragment.
  function siteHref(base, path) {
    var at = path.indexOf("#");
    return at === -1 ? sitePath(base, path) : sitePath(base, path.slice(0, at)) + "#" +
      encodeURIComponent(path.slice(at + 1));
  }

  function load(base, slug, done) {
    if (records[slug]) { done(records[slug]); return; }
    if (waiting[slug]) { waiting[slug].push(done); return; }
    waiting[slug] = [done];
    var script = document.createElement("script");
    script.src = sitePath(base, "compare/" + slug + ".js");
    document.head.appendChild(script);
  }

  function cell(row, text, tag) {
    var element = document.createElement(tag || "td");
    element.textContent = text;
    row.appendChild(element);
    return element;
  }

  function factMap(record) {
    var map = {}, order = [];
    record.facts.forEach(function (pair) {
      if (!(pair[0] in map)) { map[pair[0]] = []; order.push(pair[0]); }
      map[pair[0]].push(pair[1]);
    });
    return { map: map, order: order };
  }

  function renderHead(base, id, record) {
    var head = document.getElementById(id);
    head.textContent = "";
    var link = document.createElement("a");
    link.href = sitePath(base, record.page);
    link.textContent = record.name;
    head.appendChild(link);
  }

  function renderSummary(base, id, record) {
    var summary = document.getElementById(id);
    summary.textContent = record.model + " on " + record.gpu_type + " · #" + record.rank + " on ";
    var board = document.createElement("a");
    board.href = sitePath(base, record.board_page);
    board.textContent = record.board;
    summary.appendChild(board);
    summary.appendChild(document.createTextNode(" · " + record.workload + " · evidence "));
    var evidence = document.createElement("span");
    evidence.className = "evidence";
    evidence.textContent = record.evidence;
    summary.appendChild(evidence);
  }

  function number(value, decimals) {
    return value.toLocaleString("en-US", { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
  }

  function signed(value, figure) {
    var text = number(Math.abs(value), figure.decimals);
    return (value > 0 ? "+" : value < 0 ? "−" : "±") + (figure.prefix || "") + text + (figure.suffix || "");
  }

  function renderFigures(a, b) {
    var body = document.querySelector("#compare-figures tbody");
    body.textContent = "";
    a.figures.forEach(function (fa, index) {
      var fb = b.figures[index];
      var row = document.createElement("tr");
      row.setAttribute("data-figure", fa.label);
      cell(row, fa.label, "th").scope = "row";
      var ca = cell(row, fa.text), cb = cell(row, fb.text);
      ca.className = cb.className = "num";
      var delta = fb.value - fa.value;
      cell(row, signed(delta, fa)).className = "num delta";
      cell(row, fa.value ? (delta >= 0 ? "+" : "−") + number(Math.abs(delta) / fa.value * 100, 1) + "%" : "—")
        .className = "num percent";
      var verdict = "—";
      // A speed difference inside the wider of the two recipes' noise bands is no win for either.
      var noise = Math.max(fa.noise_percent || 0, fb.noise_percent || 0);
      if (fa.better && delta && noise && fa.value && Math.abs(delta) / fa.value * 100 <= noise) {
        verdict = "within noise (±" + number(noise, 1) + "%)";
      } else if (fa.better && delta) {
        var bWins = delta * fa.better > 0;
        verdict = (bWins ? "B" : "A") + " (" + (fa.better > 0 ? "higher" : "lower") + " is better)";
        (bWins ? cb : ca).className += " better";
        (bWins ? ca : cb).className += " worse";
      } else if (fa.better) {
        verdict = "equal";
      }
      cell(row, verdict).className = "verdict";
      body.appendChild(row);
    });
  }

  function renderWarning(a, b) {
    var differences = [];
    if (a.model !== b.model) { differences.push("different models (" + a.model + " and " + b.model + ")"); }
    if (a.gpu_type !== b.gpu_type) { differences.push("different GPU types (" + a.gpu_type + " and " + b.gpu_type + ")"); }
    if (a.workload !== b.workload) { differences.push("different workloads (" + a.workload + " and " + b.workload + ")"); }
    var warning = document.getElementById("compare-warning");
    warning.hidden = !differences.length;
    warning.textContent = differences.length ? "Not like for like: these recipes train " + differences.join(", ") +
      ". Their figures are not a ranking, and their changed arguments are not a layout change." : "";
  }

  function renderCompare(base, a, b) {
    renderHead(base, "head-a", a);
    renderHead(base, "head-b", b);
    renderSummary(base, "summary-a", a);
    renderSummary(base, "summary-b", b);
    renderWarning(a, b);
    renderFigures(a, b);
    var factsA = factMap(a), factsB = factMap(b);
    var labels = factsA.order.concat(factsB.order.filter(function (l) { return !(l in factsA.map); }));
    var body = document.querySelector("#compare-facts tbody");
    body.textContent = "";
    labels.forEach(function (label) {
      var row = document.createElement("tr");
      var va = (factsA.map[label] || ["—"]).join("\n"), vb = (factsB.map[label] || ["—"]).join("\n");
      cell(row, label, "th").scope = "row";
      cell(row, va);
      cell(row, vb);
      if (va !== vb) { row.className = "differs"; }
      body.appendChild(row);
    });
    var argBody = document.querySelector("#compare-arguments tbody");
    argBody.textContent = "";
    var names = Object.keys(a.arguments).concat(Object.keys(b.arguments).filter(function (n) {
      return !(n in a.arguments);
    })).sort();
    var changed = 0;
    names.forEach(function (name) {
      var va = name in a.arguments ? a.arguments[name] : "(absent)";
      var vb = name in b.arguments ? b.arguments[name] : "(absent)";
      if (va === vb) { return; }
      changed += 1;
      var row = document.createElement("tr");
      var klass = a.classes[name] || b.classes[name] || "not classed";
      cell(row, name, "th").scope = "row";
      cell(row, klass).className = "class-label class-" + klass.replace(/\s+/g, "-");
      cell(row, va);
      cell(row, vb);
      argBody.appendChild(row);
    });
    if (!changed) {
      var row = document.createElement("tr");
      cell(row, "No run argument differs.").colSpan = 4;
      argBody.appendChild(row);
    }
    document.getElementById("check-command").textContent =
      "openrecipes check config --candidate " + b.path + " --reference " + a.path;
    document.getElementById("compare-status").textContent = "A: " + a.slug + " · B: " + b.slug;
  }

  function initCompare() {
    var pickA = document.getElementById("pick-a"), pickB = document.getElementById("pick-b");
    if (!pickA || !pickB) { return; }
    var base = document.getElementById("compare-status").getAttribute("data-base");
    (window.openrecipesCompareIndex || []).forEach(function (group) {
      [pickA, pickB].forEach(function (select) {
        var optgroup = document.createElement("optgroup");
        optgroup.label = group.label;
        group.options.forEach(function (pair) {
          var option = document.createElement("option");
          option.value = pair[0];
          option.textContent = pair[1];
          optgroup.appendChild(option);
        });
        select.appendChild(optgroup);
      });
    });
    var options = Array.prototype.map.call(pickA.options, function (o) { return o.value; });
    var params = new URLSearchParams(window.location.search);
    var unknown = [];

    // A slug from the link that names no recipe is reported, never silently replaced by another recipe.
    function choose(select, key, fallback) {
      var wanted = params.get(key);
      if (wanted === null || options.indexOf(wanted) !== -1) {
        select.value = wanted === null ? fallback : wanted;
        return;
      }
      unknown.push(key + "=" + wanted);
      var placeholder = document.createElement("option");
      placeholder.value = "";
      placeholder.textContent = "(no such recipe: pick one)";
      select.insertBefore(placeholder, select.firstChild);
      select.value = "";
    }
    choose(pickA, "a", options[0]);
    choose(pickB, "b", options.filter(function (v) { return v !== pickA.value; })[0] || options[0]);
    var error = document.getElementById("compare-error");
    if (unknown.length) {
      error.hidden = false;
      error.textContent = "No recipe in this catalog matches " + unknown.join(" and ") +
        " in the address. Pick the recipe" + (unknown.length > 1 ? "s" : "") + " to compare below.";
      document.getElementById("compare-status").textContent = "Nothing compared yet.";
    }

    function update() {
      var slugA = pickA.value, slugB = pickB.value;
      if (!slugA || !slugB) { return; }
      error.hidden = true;
      if (window.location.protocol !== "file:") {
        window.history.replaceState(null, "", "?a=" + encodeURIComponent(slugA) + "&b=" + encodeURIComponent(slugB));
      }
      load(base, slugA, function (a) {
        load(base, slugB, function (b) {
          if (pickA.value === slugA && pickB.value === slugB) { renderCompare(base, a, b); }
        });
      });
    }
    pickA.addEventListener("change", update);
    pickB.addEventListener("change", update);
    if (options.length) { update(); }
  }

  // The index's filters: a board row shows when its GPU type and one of its GPU counts match.
  function initIndexFilters() {
    var tools = document.getElementById("index-filters");
    if (!tools) { return; }
    tools.hidden = false;
    var gpu = tools.querySelector("[data-index-filter=gpu]"), gpus = tools.querySelector("[data-index-filter=gpus]");
    var rows = Array.prototype.slice.call(document.querySelectorAll("#models-table tbody tr"));
    function apply() {
      var shown = 0;
      rows.forEach(function (row) {
        var show = (!gpu.value || row.getAttribute("data-gpu") === gpu.value) &&
          (!gpus.value || row.getAttribute("data-gpus").indexOf(" " + gpus.value + " ") !== -1);
        row.hidden = !show;
        if (show) { shown += 1; }
      });
      // A model's name cell spans its rows: it moves to the first row still shown.
      rows.forEach(function (row) {
        var head = row.querySelector("th.model-cell");
        if (!head) { return; }
        var model = row.getAttribute("data-model");
        var mine = rows.filter(function (r) { return r.getAttribute("data-model") === model; });
        var visible = mine.filter(function (r) { return !r.hidden; });
        head.rowSpan = Math.max(visible.length, 1);
        if (visible.length && visible[0] !== row) { visible[0].insertBefore(head, visible[0].firstChild); }
      });
      tools.querySelector("[data-index-count]").textContent = shown + " of " + rows.length + " boards";
    }
    gpu.addEventListener("change", apply);
    gpus.addEventListener("change", apply);
    apply();
  }

  // The home page's question: model, GPU type, GPU count, precision and token budget, answered with the lines
  // `openrecipes answer` prints (answers/<model>.js, written at build time by the same module): measured recipes,
  // then published entries, then the planner; each with its evidence level, time and cost for the budget, and how
  // to get a runnable recipe; or why nothing is offered. The address carries the question, so it can be shared.
  var KIND_TITLES = { measured: "Measured", published: "Published", predicted: "Planner" };
  var TOKEN_UNITS = { "": 1, K: 1e3, M: 1e6, B: 1e9, T: 1e12 };

  // A budget as `openrecipes answer --tokens` reads it (answer/model.py parse_tokens); null when it is not one.
  function parseTokens(text) {
    var found = /^(\d+(?:\.\d+)?)([KMBT]?)$/i.exec(String(text).trim());
    if (!found) { return null; }
    var tokens = Math.round(parseFloat(found[1]) * TOKEN_UNITS[found[2].toUpperCase()]);
    return tokens >= 1 && tokens <= 1e15 ? tokens : null;
  }

  function fillSelect(select, values, wanted, labels) {
    var previous = wanted !== undefined && wanted !== null ? wanted : select.value;
    select.textContent = "";
    values.forEach(function (value) {
      var option = document.createElement("option");
      option.value = String(value);
      option.textContent = labels && labels[value] ? labels[value] : String(value);
      select.appendChild(option);
    });
    if (values.map(String).indexOf(String(previous)) !== -1) { select.value = String(previous); }
  }

  // One line's sentences, as answer/text.py line_texts words them, time and cost scaled to the budget.
  function lineTexts(line, tokens, scale) {
    var span = line.low !== null && line.high !== null ?
      " (likely " + number(line.low, 0) + "-" + number(line.high, 0) + ")" : "";
    var cost = line.usd !== null ? usdTotal(line.usd * scale) : "no price";
    return [KIND_TITLES[line.kind] + " (" + line.evidence + "): " + number(line.tokens_per_s_per_gpu, 0) +
      " tokens/s per GPU" + span + "; " + tokensCount(tokens) + " tokens in " + duration(line.hours * scale) + ", " +
      cost, line.name + ", " + line.precision + ": " + line.layout, "get it: " + line.get]
      .concat(line.caveats.map(function (caveat) { return "caveat: " + caveat; }));
  }

  function answerBlock(base, line, tokens, scale) {
    var block = document.createElement("div");
    block.className = "answer-line kind-" + line.kind;
    lineTexts(line, tokens, scale).forEach(function (text, index) {
      var sentence = document.createElement("p");
      if (index === 1 && line.href) {  // the recipe or entry, linked to its page
        var link = document.createElement("a");
        link.href = siteHref(base, line.href);
        link.textContent = line.name;
        sentence.appendChild(link);
        sentence.appendChild(document.createTextNode(text.slice(line.name.length)));
      } else {
        sentence.textContent = text;
      }
      if (index === 0) { sentence.className = "answer-head"; }
      block.appendChild(sentence);
    });
    return block;
  }

  function initQuestion() {
    var section = document.getElementById("question");
    var data = window.openrecipesAnswers;
    if (!section || !data) { return; }
    var base = document.querySelector("link[rel=stylesheet]").getAttribute("href").replace(/static\/site\.css$/, "");
    var model = document.getElementById("ask-model"), gpu = document.getElementById("ask-gpu");
    var gpus = document.getElementById("ask-gpus"), precision = document.getElementById("ask-precision");
    var budget = document.getElementById("ask-tokens");
    var answer = document.getElementById("answer");
    var loaded = {}, asked = {};
    var params = new URLSearchParams(window.location.search);
    data.receive = function (received) {
      loaded[received.model] = received.answers;
      refill();
    };
    section.hidden = false;
    if (params.get("tokens")) { budget.value = params.get("tokens"); }
    fillSelect(model, data.models, params.get("model"));
    var wanted = { gpu: params.get("gpu"), gpus: params.get("gpus"), precision: params.get("precision") };

    function keysAt() {
      var prefix = gpu.value + "|" + gpus.value + "|";
      return Object.keys(loaded[model.value] || {}).filter(function (key) { return key.indexOf(prefix) === 0; })
        .map(function (key) { return key.slice(prefix.length); });
    }
    function refill() {
      var counts = data.gpus[model.value] || {};
      fillSelect(gpu, Object.keys(counts), wanted.gpu);
      fillSelect(gpus, counts[gpu.value] || [], wanted.gpus);
      fillSelect(precision, keysAt(), wanted.precision, { "": "any" });
      if (loaded[model.value]) { wanted = {}; }  // the address's question, kept until its model's answers load
      render();
    }
    function render() {
      answer.textContent = "";
      var answers = loaded[model.value];
      if (!answers) {
        if (!asked[model.value]) {
          asked[model.value] = true;
          var script = document.createElement("script");
          script.src = sitePath(base, "answers/" + model.value + ".js");
          document.head.appendChild(script);
        }
        return;
      }
      var tokens = parseTokens(budget.value);
      var heading = document.createElement("p");
      heading.className = "answer-question";
      if (tokens === null) {
        heading.textContent = "Give a token budget such as 1B, 500M or 2T.";
        answer.appendChild(heading);
        return;
      }
      var found = answers[gpu.value + "|" + gpus.value + "|" + precision.value];
      if (!found) { return; }
      heading.textContent = model.value + " on " + number(parseInt(gpus.value, 10), 0) + " x " + gpu.value +
        (precision.value ? " in " + precision.value : "") + ", " + tokensCount(tokens) + " tokens:";
      answer.appendChild(heading);
      var scale = tokens / data.budget;
      found.lines.forEach(function (line) { answer.appendChild(answerBlock(base, line, tokens, scale)); });
      found.not_offered.forEach(function (reason) {
        var none = document.createElement("p");
        none.className = "answer-none";
        none.textContent = "not offered: " + reason;
        answer.appendChild(none);
      });
      var address = new URLSearchParams({ model: model.value, gpu: gpu.value, gpus: gpus.value, tokens: budget.value });
      if (precision.value) { address.set("precision", precision.value); }
      try {
        window.history.replaceState(null, "", "?" + address.toString() + window.location.hash);
      } catch (error) { /* a file:// page may refuse a new address; the answer stands */ }
    }
    model.addEventListener("change", refill);
    gpu.addEventListener("change", refill);
    gpus.addEventListener("change", refill);
    precision.addEventListener("change", render);
    budget.addEventListener("input", render);
    refill();
  }

  // The token budget: the page's wall times and costs are for site.yaml's budget; a new one scales each of them
  // (both grow in proportion to the tokens), written as the build writes them (site/format.py).
  function duration(hours) {
    if (hours < 1) { return number(hours * 60, 0) + " min"; }
    return hours < 48 ? number(hours, 1) + " h" : number(hours / 24, 1) + " days";
  }

  function usdTotal(usd) {
    return "$" + number(usd, usd >= 100 ? 0 : 2);
  }

  function tokensCount(tokens) {
    var units = [[1e12, "T"], [1e9, "B"], [1e6, "M"]];
    for (var i = 0; i < units.length; i += 1) {
      if (tokens >= units[i][0]) { return String(+(tokens / units[i][0]).toPrecision(6)) + units[i][1]; }
    }
    return number(tokens, 0);
  }

  function initTokenBudget() {
    var holder = document.querySelector("[data-budget]");
    if (!holder) { return; }
    var base = parseFloat(holder.getAttribute("data-budget"));
    var input = holder.querySelector("[data-budget-input]");
    holder.querySelector(".budget-control").hidden = false;
    input.addEventListener("input", function () {
      var tokens = parseFloat(input.value) * 1e9;
      if (!(tokens > 0)) { return; }
      var scale = tokens / base;
      document.querySelectorAll("[data-budget-text]").forEach(function (e) { e.textContent = tokensCount(tokens); });
      document.querySelectorAll("[data-train-hours]").forEach(function (e) {
        var hours = parseFloat(e.getAttribute("data-train-hours")) * scale;
        if (e.hasAttribute("data-value")) { e.setAttribute("data-value", hours); }
        e.textContent = duration(hours);
      });
      document.querySelectorAll("[data-train-usd]").forEach(function (e) {
        var usd = parseFloat(e.getAttribute("data-train-usd")) * scale;
        if (e.hasAttribute("data-value")) { e.setAttribute("data-value", usd); }
        e.textContent = usdTotal(usd);
      });
    });
  }

  // A link to a folded section (a Plan page's GPU type and count) opens it, so the link never lands on nothing.
  function openTarget() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (!target) { return; }
    var folded = target.querySelector("details") || target.closest("details");
    if (target.tagName === "SECTION" && folded) { folded.open = true; }
    for (var node = target.closest("details"); node; node = node.parentElement.closest("details")) { node.open = true; }
    target.scrollIntoView();
    // A table row in a box that scrolls on its own: the box comes into view whole, its header at the top and the
    // row just below it, so the row is never read without its column names.
    var box = target.tagName === "TR" && target.closest(".table-scroll");
    var head = box && target.closest("table").tHead;
    if (box && head && box.scrollHeight > box.clientHeight) {
      box.scrollTop = target.offsetTop - head.offsetHeight;
      box.scrollIntoView({ block: "start" });
    }
  }

  // The page's loader adds this script while the page is read or after: start now if the page is read already.
  function start() {
    openTarget();
    window.addEventListener("hashchange", openTarget);
    initIndexFilters();
    initQuestion();
    initTokenBudget();
    initCopyButtons();
    initSortableTables();
    initFilters();
    initRecordFilters();
    initAddressControls();
    initCompare();
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
}());
