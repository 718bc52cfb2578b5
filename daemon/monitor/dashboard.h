#pragma once
// The live dashboard served at / by every node (docs/monitoring.md#dashboard): index.html, dashboard.js
// and dashboard.css from daemon/monitor/dashboard/, with Debian's Chart.js 3 and d3 v3, all embedded in the binary
// (daemon/monitor/dashboard_assets.S). The page polls /cluster once a second.

namespace gossip::daemon {

class HttpServer;

// Publishes /, /dashboard.js, /dashboard.css, /chart.min.js and /d3.min.js. Once, at start: the files
// never change, so their pages are built (copied out of the binary) a single time.
void publishDashboard(HttpServer& http);

}  // namespace gossip::daemon
