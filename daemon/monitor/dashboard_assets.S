// The dashboard's files (daemon/monitor/dashboard.h), embedded in the binary with .incbin, so that a node serves
// its dashboard with nothing installed beside it. Each GOSSIP_DASHBOARD_* macro is the file's absolute
// path as a quoted string, passed by daemon/monitor/CMakeLists.txt as a compile definition of this file; quoted,
// the preprocessor leaves it alone (unquoted, a path component such as "linux" or "unix" would be
// expanded as GCC's predefined macro). The assembler does not report .incbin files as dependencies, so
// CMake lists them in OBJECT_DEPENDS.
//
// Each file becomes a pair of symbols, NAME_begin and NAME_end (one past the last byte), no terminator.

.macro asset name, file
  .section .rodata.gossip_dashboard, "a", @progbits
  .balign 16
  .globl \name\()_begin, \name\()_end
  .hidden \name\()_begin, \name\()_end
  .type \name\()_begin, @object
\name\()_begin:
  .incbin "\file"
\name\()_end:
  .size \name\()_begin, \name\()_end - \name\()_begin
.endm

asset gossip_dashboard_index_html, GOSSIP_DASHBOARD_INDEX_HTML
asset gossip_dashboard_js, GOSSIP_DASHBOARD_JS
asset gossip_dashboard_css, GOSSIP_DASHBOARD_CSS
asset gossip_dashboard_chart_js, GOSSIP_DASHBOARD_CHART_JS
asset gossip_dashboard_d3_js, GOSSIP_DASHBOARD_D3_JS

// No executable stack (without this note the linker assumes this object needs one).
.section .note.GNU-stack,"",@progbits
