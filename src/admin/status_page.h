// The web status page of the admin server, served at "/": one static HTML file with its styles
// and script inline (src/admin/status_page.html), compiled into the binary by
// cmake/embed_file.cmake. It holds no data: its script reads /debug/proxy_status,
// /debug/change_summaries, /debug/changes/ID, /debug/proxy_config, /debug/config_source and
// /metrics from the same server, with the bearer token the user types in when one is required.
#pragma once

#include <string_view>

namespace cxds {

// The page's bytes (UTF-8 HTML), valid for the life of the process.
std::string_view StatusPageHtml();

}  // namespace cxds
