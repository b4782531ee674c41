#include "report/flame_chart_page.h"

#include <map>

#include <fmt/format.h>

#include "report/render.h"

namespace profiling::report {
namespace {

constexpr const char* kStyle = R"(
.flame-chart{width:100%;overflow-x:auto;margin-bottom:.6em}
.flame-chart h3{font:600 13px ui-monospace,monospace;margin:.4em 0 .1em}
)";

// Builds each thread's tree from its runs and draws it: a run's frames
// extend the open frames they share with the run before (the longest
// common prefix), the rest open anew; the leaf's own time and the gaps
// (runs without a stack) are blank children, transparent. A gap closes no
// frame: the thread was off the CPU, its functions had not returned (on a
// busy machine a 2 s phase split into hundreds of slivers otherwise).
constexpr const char* kScript = R"(
(function(){
  var box=document.getElementById('flame-charts'), dataEl=document.getElementById('flame-chart-data');
  if(!box||!dataEl||!data_ok()) return;
  function data_ok(){ return typeof flamegraph!=='undefined'&&typeof d3!=='undefined'; }
  var data=JSON.parse(dataEl.textContent), names=data.names, objects=data.objects, frames=data.frames;
  function ms(ns){ return (ns/1e6).toFixed(ns<1e7?2:0)+' ms'; }
  function tree(th){
    var root={n:th.label,v:0,c:[],s:0,t:0}, path=[root];
    th.runs.forEach(function(r){
      var w=r[1];
      if(r[2]>=0){
        var stack=data.stacks[r[2]], k=1;
        while(k<path.length&&k-1<stack.length&&path[k].f===stack[k-1]) k++;
        path.length=k;
        for(var i=k-1;i<stack.length;i++){
          var n={f:stack[i],n:names[frames[stack[i]][0]],v:0,c:[],s:0,t:r[0]};
          path[path.length-1].c.push(n); path.push(n);
        }
      }
      for(var i=0;i<path.length;i++){ path[i].v+=w; path[i].s+=r[3]; }
      var leaf=path[path.length-1], last=leaf.c[leaf.c.length-1];
      if(last&&last.blank) last.v+=w; else leaf.c.push({blank:1,n:'',v:w,c:[],s:0,t:r[0]});
    });
    if(root.v<data.span) root.c.push({blank:1,n:'',v:data.span-root.v,c:[]});
    root.v=data.span;
    (function prune(n){ if(n.c.length===1&&n.c[0].blank) n.c=[]; n.c.forEach(prune); })(root);
    return root;
  }
  function describe(d){
    if(d.data.blank) return '';
    var f=d.data.f!==undefined?frames[d.data.f]:null, o=f?objects[f[1]]:'';
    return d.data.n+(o?' ('+o+')':'')+'\nfrom '+ms(d.data.t||0)+' for '+ms(d.data.v)+', '+d.data.s+' samples';
  }
  var width=Math.max(box.clientWidth||960,320);
  data.threads.forEach(function(th){
    var div=document.createElement('div');
    div.className='flame-chart';
    div.setAttribute('data-tid',th.tid); div.setAttribute('data-pid',th.pid);
    var h=document.createElement('h3'); h.textContent=th.label+': '+th.samples+' samples'; div.appendChild(h);
    var el=document.createElement('div'); div.appendChild(el); box.appendChild(div);
    var chart=flamegraph.default().width(width).cellHeight(16).minFrameSize(0.5).transitionDuration(0)
      .sort(false).inverted(true).getName(function(d){ return d.data.n; })
      .tooltip(flamegraph.tooltip.defaultFlamegraphTooltip().text(describe))
      .setColorMapper(function(d,c){ return d.data.blank?'transparent':c; });
    d3.select(el).datum(tree(th)).call(chart);
  });
  box.setAttribute('data-ready','1');
})();
)";

// A JSON string's text that can stand inside a <script> element (no "<").
std::string script_text(const std::string& text) {
  std::string out;
  for (char c : json_escape(text)) out += c == '<' ? std::string("\\u003c") : std::string(1, c);
  return out;
}

}  // namespace

std::string flame_chart_section(const Timeline& timeline) {
  std::string out = "<h2>Flame charts: each thread over time</h2>\n<style>" + std::string(kStyle) + "</style>\n";
  out += "<div id=\"flame-charts\">\n";
  if (!timeline.has_times) {
    out += "<p id=\"flame-charts-none\">No times in this profile: only profiles sampled from outside "
           "(<code>profil run --outside</code>, <code>profil attach</code>) record when each sample was taken.</p>\n"
           "</div>\n";
    return out;
  }
  out += fmt::format("<p>Time runs left to right, {:.3f} s on one scale for every thread; each frame starts "
                     "when its first sample was taken and lasts until a sample without it; where the thread took no "
                     "sample (off the CPU) it is blank under the frames it was in. Click a frame to zoom, hover for its time.</p>\n",
                     static_cast<double>(timeline.span_ns) / 1e9);
  // Names and objects once each; a frame is [name, object].
  std::map<std::string, size_t> names, objects;
  std::string names_json, objects_json, frames_json;
  auto intern = [](std::map<std::string, size_t>& table, std::string& json, const std::string& text) {
    auto [it, inserted] = table.try_emplace(text, table.size());
    if (inserted) json += (json.empty() ? "\"" : ",\"") + script_text(text) + '"';
    return it->second;
  };
  for (const StackFrame& f : timeline.stacks.frames()) {
    const size_t name = intern(names, names_json, frame_label(f)), object = intern(objects, objects_json, f.object);
    frames_json += fmt::format("{}[{},{}]", frames_json.empty() ? "" : ",", name, object);
  }
  std::string stacks_json;
  for (const Stack& s : timeline.stacks.stacks()) {
    stacks_json += stacks_json.empty() ? "[" : ",[";
    for (size_t k = 0; k < s.frames.size(); ++k) stacks_json += (k ? "," : "") + std::to_string(s.frames[k]);
    stacks_json += ']';
  }
  std::string threads_json;
  for (const TimelineThread& t : timeline.threads) {
    threads_json += fmt::format("{}{{\"pid\":{},\"tid\":{},\"label\":\"{}\",\"samples\":{},\"runs\":[",
                                threads_json.empty() ? "" : ",", t.pid, t.tid, script_text(t.label), t.samples);
    for (size_t r = 0; r < t.runs.size(); ++r) {
      const TimelineRun& run = t.runs[r];
      threads_json += fmt::format("{}[{},{},{},{}]", r ? "," : "", run.start_ns, run.width_ns,
                                  run.stack == TimelineRun::kGap ? -1 : static_cast<int64_t>(run.stack), run.samples);
    }
    threads_json += "]}";
  }
  out += fmt::format("<script type=\"application/json\" id=\"flame-chart-data\">{{\"span\":{},\"start_ns\":{},"
                     "\"names\":[{}],\"objects\":[{}],\"frames\":[{}],\"stacks\":[{}],\"threads\":[{}]}}</script>\n",
                     timeline.span_ns, timeline.start_ns, names_json, objects_json, frames_json, stacks_json,
                     threads_json);
  out += "</div>\n<script>" + std::string(kScript) + "</script>\n";
  return out;
}

}  // namespace profiling::report
