#include "report/flame_graph_sandwich.h"

#include <string>

namespace profiling::report {

namespace {

constexpr const char* kSandwichStyle = R"(
#flame-graph-sandwich{border-top:1px solid #ccc;margin-top:.6em;padding-top:.3em}
#flame-graph-sandwich h3{display:flex;gap:1em;align-items:baseline;margin:.2em 0;font-size:1em}
#flame-graph-sandwich .sandwich-label{font:12px ui-monospace,monospace;color:#555;margin:.2em 0}
)";

// profilSandwich: the function is a name (less frame_label's " (inline)"
// mark: an inlined copy is the same function, as call_relations counts
// it) and an object. Each outermost place it is in the tree (a recursive
// call inside it is counted with the outer one, as --callers counts a
// stack once) adds its samples to both roots: its path up to the graph's
// root, reversed, under the callers' root; its subtree merged under the
// callees'. Without recursion: the stacks are hundreds of frames deep.
constexpr const char* kSandwichScript = R"(
function profilSandwich(data,n,o){
  var names=data.names;
  function strip(s){ return s.replace(/ \(inline\)$/,''); }
  var want=strip(names[n]);
  function same(node){ return node.o===o&&strip(names[node.n])===want; }
  var callers={n:n,o:o,v:0,c:[]}, callees={n:n,o:o,v:0,c:[]};
  function child(parent,node,v){
    var c=parent.c;
    for(var i=0;i<c.length;i++) if(c[i].n===node.n&&c[i].o===node.o&&!c[i].i===!node.i){ c[i].v+=v; return c[i]; }
    var made={n:node.n,o:node.o,v:v,c:[]};
    if(node.i) made.i=1;
    c.push(made);
    return made;
  }
  function merge(into,node){
    var pending=[[into,node]];
    while(pending.length){
      var p=pending.pop(), kids=p[1].c||[];
      for(var i=0;i<kids.length;i++) if(kids[i].v) pending.push([child(p[0],kids[i],kids[i].v),kids[i]]);
    }
  }
  var path=[], pending=[[data.tree,0]];
  while(pending.length){
    var top=pending.pop(), node=top[0];
    path.length=top[1];
    if(top[1]>0&&node.v&&same(node)){
      callers.v+=node.v; callees.v+=node.v;
      merge(callees,node);
      for(var cur=callers,k=path.length-1;k>=1;k--) cur=child(cur,path[k],node.v);
      continue;
    }
    path.push(node);
    var kids=node.c||[];
    for(var i=kids.length-1;i>=0;i--) pending.push([kids[i],top[1]+1]);
  }
  return {callers:callers,callees:callees};
}
)";

// Draws the sandwich of a clicked frame with two more charts of the
// library the flame graph uses; a frame clicked in either shows its own.
constexpr const char* kSandwichShow = R"(
(function(){
  var section=document.getElementById('flame-graph-sandwich'), dataEl=document.getElementById('flame-graph-data');
  if(!section||!dataEl||typeof flamegraph==='undefined') return;
  var data=JSON.parse(dataEl.textContent), names=data.names, objects=data.objects;
  var title=document.getElementById('flame-graph-sandwich-title');
  function where(d){ var o=objects[d.data.o]; return o?' ('+o+')':''; }
  function draw(el,tree,icicle,of){
    el.textContent='';
    var label=function(d){
      return names[d.data.n]+where(d)+': '+d.data.v+' samples, '+(of?(100*d.data.v/of).toFixed(2):'0')+
        ' % of the function\'s';
    };
    var chart=flamegraph.default()
      .width(Math.max(section.clientWidth||960,320)).cellHeight(18).minFrameSize(0.5).transitionDuration(0)
      .sort(true).inverted(icicle).getName(function(d){ return names[d.data.n]; })
      .getLibtype(function(d){ return d.data.i?'inlined':objects[d.data.o]==='[python]'?'jit':''; })
      .tooltip(flamegraph.tooltip.defaultFlamegraphTooltip().text(label)).setLabelHandler(label)
      .onClick(function(d){ if(d.depth>0) window.profilSandwichShow(d); });
    d3.select(el).datum(tree).call(chart);
  }
  window.profilSandwichShow=function(d){
    if(!d||!d.parent){ section.hidden=true; section.removeAttribute('data-function'); return; }
    var s=profilSandwich(data,d.data.n,d.data.o), name=names[d.data.n].replace(/ \(inline\)$/,'');
    section.hidden=false;
    section.setAttribute('data-function',name);
    title.textContent=name+where(d)+': '+s.callers.v+' samples'+(data.total?', '+(100*s.callers.v/data.total).toFixed(2)+
      ' % of all':'')+', everywhere it runs';
    draw(document.getElementById('flame-graph-callers'),s.callers,false,s.callers.v);
    draw(document.getElementById('flame-graph-callees'),s.callees,true,s.callees.v);
  };
  document.getElementById('flame-graph-sandwich-close').addEventListener('click',function(){
    window.profilSandwichShow(null);
  });
})();
)";

}  // namespace

std::string flame_graph_sandwich_section() {
  std::string out = "<style>" + std::string(kSandwichStyle) + "</style>\n";
  out += "<div id=\"flame-graph-sandwich\" hidden><h3><span id=\"flame-graph-sandwich-title\"></span>"
         "<button id=\"flame-graph-sandwich-close\" type=\"button\">Close</button></h3>\n"
         "<p class=\"sandwich-label\">Callers: who called it, the nearest just above it (the function at the "
         "bottom)</p><div id=\"flame-graph-callers\"></div>\n"
         "<p class=\"sandwich-label\">Callees: what it called (the function at the top)</p>"
         "<div id=\"flame-graph-callees\"></div></div>\n";
  out += "<script id=\"flame-graph-sandwich-script\">" + std::string(kSandwichScript) + "</script>\n";
  out += "<script>" + std::string(kSandwichShow) + "</script>\n";
  return out;
}

}  // namespace profiling::report
