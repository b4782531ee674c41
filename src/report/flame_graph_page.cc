#include "report/flame_graph_page.h"

#include <string>
#include <string_view>

#include <fmt/format.h>

#include "report/flame_graph_assets.h"
#include "report/flame_graph_sandwich.h"

namespace profiling::report {

namespace {

constexpr const char* kFlameGraphStyle = R"(
#flame-graph-controls{display:flex;gap:.6em;align-items:center;flex-wrap:wrap;margin:.3em 0}
#flame-graph-search{min-width:22em;font:13px ui-monospace,monospace;padding:2px 4px}
#flame-graph-matches{color:#606;font-variant-numeric:tabular-nums}
#flame-graph{width:100%;overflow-x:auto}
#flame-graph-details{min-height:1.4em;margin:.2em 0;font:12px ui-monospace,monospace;color:#333}
.d3-flame-graph-tip{white-space:pre-line;font:12px/1.4 ui-monospace,monospace;max-width:60em}
)";

// Draws #flame-graph-data with the library's global `flamegraph`, root at
// the top first (an icicle, as pprof's and speedscope's): stacks of python
// or a compiler run hundreds of frames deep, and with the root at the
// bottom the page would open on a screen of narrow tips. Percent
// of all samples (data.total), with the 95 % Wilson score interval of
// report.h's wilson_interval (same formula, same z).
constexpr const char* kFlameGraphScript = R"(
(function(){
  var el=document.getElementById('flame-graph'), dataEl=document.getElementById('flame-graph-data');
  if(!el||!dataEl) return;
  var data=JSON.parse(dataEl.textContent), names=data.names, objects=data.objects, n=data.total;
  var details=document.getElementById('flame-graph-details'), matches=document.getElementById('flame-graph-matches');
  if(typeof flamegraph==='undefined'||typeof d3==='undefined'){el.textContent='The flame graph library did not load.';return;}
  if(!data.tree.v){el.textContent='No samples to draw.';return;}
  function wilson(p,m){
    if(!(m>0)) return [0,0];
    var z=1.959963984540054, z2=z*z, d=1+z2/m;
    var c=(p+z2/(2*m))/d, h=z/d*Math.sqrt(p*(1-p)/m+z2/(4*m*m));
    return [Math.max(0,c-h)*100, Math.min(1,c+h)*100];
  }
  // k samples in o draws of no (report.h share_interval, same formula):
  // above the kernel tick a signal counts for several periods.
  var no=data.total_observations||0;
  function interval(k,o){
    if(!n) return [0,0];
    if(!no||(k===o&&n===no)) return wilson(k/n,n);
    var p=k/n, v=0;
    o=Math.min(o,no);
    if(o>0) v+=(1-p)*(1-p)*k*k/o;
    if(no>o) v+=p*p*(n-k)*(n-k)/(no-o);
    v/=n*n;
    return wilson(p,v>0?p*(1-p)/v:no);
  }
  function share(k,o){
    var w=interval(k,o);
    return k+' samples, '+(n?100*k/n:0).toFixed(2)+' % (95 %: '+w[0].toFixed(2)+'\u2013'+w[1].toFixed(2)+' %)';
  }
  function self(d,key){
    key=key||'v';
    var s=d.data[key]||0, c=d.data.c||[];
    for(var i=0;i<c.length;i++) s-=c[i][key]||0;
    return s;
  }
  function total(d){ return share(d.data.v,d.data.w||0); }
  function selfShare(d){ return share(self(d),self(d,'w')); }
  function name(d){ return names[d.data.n]; }
  function where(d){ var o=objects[d.data.o]; return o?' ('+o+')':''; }
  // A differential graph (profil diff): the new profile's shape, each
  // frame also with its base samples, whether its self samples changed
  // (its colour) and whether its share did.
  var differential=('base_total' in data), nb=data.base_total;
  function signed(x,digits){ return (x>=0?'+':'')+(digits===undefined?String(x):x.toFixed(digits)); }
  function change(d){
    var b=d.data.b||0, pb=nb?100*b/nb:0, pn=n?100*d.data.v/n:0, c=pn-pb, sb=self(d,'b'), sn=self(d);
    return 'base: '+b+' samples, '+pb.toFixed(2)+' %; self '+sb+'\nself change: '+signed(sn-sb)+' samples'+
      (data.rate_per==='wall_second'?' (tested per wall second)':'')+', q = '+d.data.r+
      (('d' in d.data)?', changed':', within the noise')+
      '\nshare change: '+signed(c,2)+' points of share, q = '+d.data.q;
  }
  function describe(d){
    return name(d)+where(d)+'\ntotal: '+total(d)+'\nself: '+selfShare(d)+(differential?'\n'+change(d):'');
  }
  var tip=flamegraph.tooltip.defaultFlamegraphTooltip().text(describe);
  var searched=null, pattern=null;
  var still=window.matchMedia&&window.matchMedia('(prefers-reduced-motion: reduce)').matches;
  var chart=flamegraph.default()
    .width(Math.max(el.clientWidth||960,320)).cellHeight(18).minFrameSize(0.5)
    .transitionDuration(still?0:400).sort(false).tooltip(tip).inverted(true)
    .getName(name)
    // Inlined code aqua; an interpreted program's own functions (Python's,
    // Ruby's), and JIT code named from its map, green (d3-flame-graph's
    // 'jit' hue).
    .getLibtype(function(d){ var o=objects[d.data.o]; return d.data.i?'inlined':o==='[python]'||o==='[ruby]'||o==='[jit]'?'jit':''; })
    .setLabelHandler(function(d){
      return name(d)+where(d)+': total '+total(d)+'; self '+selfShare(d);
    })
    .setDetailsElement(details)
    .onClick(function(d){ el.setAttribute('data-zoomed',name(d)); if(window.profilSandwichShow) profilSandwichShow(d); })
    .setSearchMatch(function(d,term){
      if(!term) return false;
      // One RegExp per search, not per frame (a large graph has 10^5).
      if(term!==searched){ searched=term; try{ pattern=new RegExp(term); }catch(e){ pattern=null; } }
      var s=name(d);
      return pattern?pattern.test(s):s.indexOf(term)>=0;
    })
    .setSearchHandler(function(results){
      // A match inside another match is counted once, with its outermost.
      var hit=new Set(results), sum=0, drawn=0, frames=new Set();
      results.forEach(function(d){
        frames.add(name(d));
        for(var a=d.parent;a;a=a.parent) if(hit.has(a)) return;
        sum+=d.data.v;
        drawn+=d.data.w||0;
      });
      matches.textContent=results.length?'matches: '+frames.size+' function'+(frames.size==1?'':'s')+', '+share(sum,drawn):'no match';
      matches.setAttribute('data-samples',sum);
    });
  // Red grew, blue shrank (its self samples, or seconds per second), more
  // saturated the larger the change against the frame's samples (as
  // d3-flame-graph's differentialColorMapper); grey within the noise (no
  // "d"); orange: a path the base did not have. Not the library's mapper:
  // it takes a change equal to the frame's value for "new", which in the
  // base's shape (values "b") is any frame whose self samples doubled.
  // The shape button redraws the base's stacks (widths from "b"), where
  // the paths the new profile lost are (blue): Gregg's negated graph.
  var shape=document.getElementById('flame-graph-shape');
  if(differential){
    chart.setColorMapper(function(d,original){
      if(d.highlight) return original;
      var delta=d.data.d;
      if(!delta) return 'rgb(220,220,220)';
      if(!d.data.b) return 'rgb(255,190,90)';
      var c=Math.round(235*(1-Math.abs(delta)/Math.max(d.value||0,Math.abs(delta))));
      return delta>0?'rgb(220,'+c+','+c+')':'rgb('+c+','+c+',220)';
    });
    chart.getValue(function(d){ return el.getAttribute('data-shape')==='base'?(d.b||0):d.v; });
    el.setAttribute('data-differential','1'); el.setAttribute('data-shape','new');
    shape.addEventListener('click',function(){
      var base=el.getAttribute('data-shape')!=='base';
      el.setAttribute('data-shape',base?'base':'new');
      shape.textContent=base?'Shape: the new stacks':'Shape: the base stacks';
      chart.update(data.tree);
    });
  }
  d3.select(el).datum(data.tree).call(chart);
  el.setAttribute('data-orientation','icicle');
  var search=document.getElementById('flame-graph-search');
  search.addEventListener('input',function(){
    if(search.value){ chart.search(search.value); }
    else{ chart.clear(); matches.textContent=''; matches.removeAttribute('data-samples'); }
  });
  document.getElementById('flame-graph-reset').addEventListener('click',function(){
    chart.resetZoom(); el.removeAttribute('data-zoomed');
  });
  var toggle=document.getElementById('flame-graph-toggle');
  toggle.addEventListener('click',function(){
    var icicle=!chart.inverted();
    chart.inverted(icicle).update();
    el.setAttribute('data-orientation',icicle?'icicle':'flame');
    toggle.textContent=icicle?'Flame: root at the bottom':'Icicle: root at the top';
  });
  window.addEventListener('resize',function(){ chart.width(Math.max(el.clientWidth||960,320)).update(); });
  el.setAttribute('data-ready','1');
})();
)";

}  // namespace

std::string flame_graph_section(const FlameGraph& graph, uint64_t total, uint64_t total_observations) {
  std::string out = std::string(graph.differential() ? "<h2>Differential flame graph</h2>" : "<h2>Flame graph</h2>") +
                    "\n<style>" + std::string(kFlameGraphStyle) + "</style>\n";
  out += "<div id=\"flame-graph-controls\">"
         "<input id=\"flame-graph-search\" type=\"search\" placeholder=\"search (regular expression)\" "
         "aria-label=\"search functions\">"
         "<span id=\"flame-graph-matches\"></span>"
         "<button id=\"flame-graph-reset\" type=\"button\">Reset zoom</button>"
         "<button id=\"flame-graph-toggle\" type=\"button\">Flame: root at the bottom</button>";
  if (graph.differential()) out += "<button id=\"flame-graph-shape\" type=\"button\">Shape: the base stacks</button>";
  out += "</div>\n";
  out += "<div id=\"flame-graph\"></div>\n<div id=\"flame-graph-details\"></div>\n";
  out += "<p>Each frame's width is its total samples: itself and what it called there. Click a frame to zoom, "
         "hover for its self and total samples with their 95 % intervals; search highlights the functions "
         "that match and sums their samples. A click also shows, below, the clicked function's callers and "
         "callees wherever it runs (a sandwich).</p>\n";
  if (graph.differential())
    out += fmt::format(
        "<p id=\"flame-graph-legend\">The new profile's stacks, each frame coloured by the change of its self "
        "samples since the base ({}): <span style=\"color:#c00\">red</span> grew, <span "
        "style=\"color:#00c\">blue</span> shrank, the deeper the larger the change against the frame's samples; "
        "grey frames are within the sampling noise (the conditional binomial test of two Poisson counts, false "
        "discovery rate 5 % across the frames), their callers too when only a callee changed; orange frames are "
        "new paths, whose own samples changed. The tooltip also gives the change of the frame's share of all samples and its test. The shape "
        "button draws the base's stacks instead, with the same colours: there the paths the new profile lost are "
        "(blue).</p>\n",
        graph.rate_per_wall_second() ? "per wall second of each profile" : "per run, at each profile's rate");
  out += "<script type=\"application/json\" id=\"flame-graph-data\">" + graph.json(total, total_observations) + "</script>\n";
  // On lines of its own, so that a reader (or a golden test) can tell the
  // library from the page.
  out += fmt::format("<script id=\"flame-graph-library\">\n{}\n</script>\n",
                     std::string_view(kFlameGraphLibrary, kFlameGraphLibrarySize));
  out += "<script>" + std::string(kFlameGraphScript) + "</script>\n";
  out += flame_graph_sandwich_section();
  return out;
}

}  // namespace profiling::report
