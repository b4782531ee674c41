#!/bin/sh
# The HTML page's sandwich view (issue 35) carries what --callers and
# --callees print: the page's own sandwich function (the script
# #flame-graph-sandwich-script), run by node on the page's flame graph
# data (#flame-graph-data), gives every function of the profile the same
# total samples, and the same direct callers and callees with the same
# samples, as `profil report --callers/--callees --format json` on the same
# file (call_relations.h). The profile has no recursion (where --callers
# counts an edge once per stack and the sandwich follows the outermost
# call: see flame_graph_sandwich.cc).
# usage: report_sandwich.sh PROFIL REPORT_MAKE_PROFILE FIXTURE
profil=$(realpath "$1") || exit 1
make_profile=$(realpath "$2") || exit 1
fixture=$(realpath "$3") || exit 1
command -v node > /dev/null || { echo "SKIP: node is not installed"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
"$make_profile" app.profraw "$fixture" 'hot_inner<-hot_outer<-main=600' 'hot_outer<-main=300' \
  'local_helper<-main=300' 'hot_inner<-local_helper<-main=250' \
  'fixture_library_work<-hot_inner<-local_helper<-main=120' 'fixture_library_work<-hot_inner<-hot_outer<-main=80' \
  'fixture_library_work<-main=40' main=30 || { echo "FAIL: report_make_profile"; exit 1; }
"$profil" report --format html -o page.html app.profraw || { echo "FAIL: profil report --format html"; exit 1; }
"$profil" report --callers . --format json app.profraw > callers.json || { echo "FAIL: --callers"; exit 1; }
"$profil" report --callees . --format json app.profraw > callees.json || { echo "FAIL: --callees"; exit 1; }
cat > check.js << 'EOF_JS'
const fs = require("fs");
const vm = require("vm");
const page = fs.readFileSync("page.html", "utf8");
const script = /<script id="flame-graph-sandwich-script">([\s\S]*?)<\/script>/.exec(page);
const data = /<script type="application\/json" id="flame-graph-data">([\s\S]*?)<\/script>/.exec(page);
if (!script || !data) { console.log("FAIL: the page lacks the sandwich script or the graph's data"); process.exit(1); }
const context = {};
vm.runInNewContext(script[1] + "\nthis.profilSandwich = profilSandwich;", context);
const graph = JSON.parse(data[1]);
let failures = 0;
const fail = (text) => { console.log("FAIL: " + text); failures++; };
// Where each function is drawn: a node of its name and object.
function nodeOf(name, object) {
  const pending = [graph.tree];
  while (pending.length) {
    const node = pending.pop();
    if (graph.names[node.n] === name && graph.objects[node.o] === object) return node;
    for (const c of node.c || []) pending.push(c);
  }
  return null;
}
const edges = (tree) => Object.fromEntries((tree.c || []).map((c) => [graph.names[c.n] + " (" + graph.objects[c.o] + ")", c.v]));
let checked = 0;
for (const which of ["callers", "callees"]) {
  const relations = JSON.parse(fs.readFileSync(which + ".json", "utf8")).functions;
  for (const f of relations) {
    const node = nodeOf(f.function, f.object);
    if (!node) { fail(`${f.function} (${f.object}) is not in the flame graph`); continue; }
    const sandwich = context.profilSandwich(graph, node.n, node.o)[which];
    if (sandwich.v !== f.total_samples)
      fail(`${f.function}: the sandwich has ${sandwich.v} samples, --${which} ${f.total_samples}`);
    const want = Object.fromEntries(f[which].map((e) => [e.function + " (" + e.object + ")", e.samples]));
    const got = edges(sandwich);
    if (JSON.stringify(Object.entries(got).sort()) !== JSON.stringify(Object.entries(want).sort()))
      fail(`${f.function}: ${which} ${JSON.stringify(got)} in the page, ${JSON.stringify(want)} from --${which}`);
    checked++;
  }
}
if (checked < 10) fail(`only ${checked} functions compared`);
console.log(`${checked} functions' callers and callees compared`);
process.exit(failures ? 1 : 0);
EOF_JS
node check.js
