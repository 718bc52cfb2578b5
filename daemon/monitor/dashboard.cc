#include "daemon/monitor/dashboard.h"

#include <string>

#include "daemon/monitor/http_server.h"

// Defined in dashboard_assets.S: each file's first byte and one past its last.
#define GOSSIP_DASHBOARD_ASSET(name) extern "C" const char gossip_dashboard_##name##_begin[], gossip_dashboard_##name##_end[];
GOSSIP_DASHBOARD_ASSET(index_html)
GOSSIP_DASHBOARD_ASSET(js)
GOSSIP_DASHBOARD_ASSET(css)
GOSSIP_DASHBOARD_ASSET(chart_js)
GOSSIP_DASHBOARD_ASSET(d3_js)
#undef GOSSIP_DASHBOARD_ASSET

namespace gossip::daemon {

void publishDashboard(HttpServer& http) {
  struct Asset {
    const char* path;
    const char* type;
    const char* begin;
    const char* end;
  };
  const Asset assets[] = {
      {"/", "text/html; charset=utf-8", gossip_dashboard_index_html_begin, gossip_dashboard_index_html_end},
      {"/dashboard.js", "application/javascript", gossip_dashboard_js_begin, gossip_dashboard_js_end},
      {"/dashboard.css", "text/css; charset=utf-8", gossip_dashboard_css_begin, gossip_dashboard_css_end},
      {"/chart.min.js", "application/javascript", gossip_dashboard_chart_js_begin, gossip_dashboard_chart_js_end},
      {"/d3.min.js", "application/javascript", gossip_dashboard_d3_js_begin, gossip_dashboard_d3_js_end},
  };
  for (const auto& a : assets) http.publish(a.path, a.type, std::string(a.begin, a.end));
}

}  // namespace gossip::daemon
