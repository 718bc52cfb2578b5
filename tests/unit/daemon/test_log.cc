// daemon/log/log.h: level names, node.log_levels overrides, JSON escaping, both line formats, and loggers
// sharing one sink whose levels change at run time.
#include <doctest/doctest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/base_sink.h>

#include "core/error.h"
#include "daemon/log/log.h"

namespace gossip::logging {
namespace {

using Clock = std::chrono::system_clock;
// 2026-11-26T17:03:00.123Z
const Clock::time_point kTime = Clock::time_point(std::chrono::milliseconds(1795712580123));

// Keeps every formatted line.
class LinesSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::vector<std::string> lines;

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    lines.emplace_back(buf.data(), buf.size());
  }
  void flush_() override {}
};

TEST_CASE("level names parse exactly - and every level has its name back") {
  for (auto name : kLevelNames) {
    const auto level = parseLevel(name);
    REQUIRE_MESSAGE(level, name);
    CHECK(levelName(*level) == name);
  }
  CHECK(parseLevel("warn") == Level::warn);
  CHECK(parseLevel("error") == Level::err);
  for (const char* bad : {"", "INFO", "warning", "critical", " info", "verbose"}) CHECK_FALSE_MESSAGE(parseLevel(bad), bad);
  CHECK(levelName(Level::critical) == "error");
}

TEST_CASE("node.log_levels overrides: lists - spaces - empty - and each kind of mistake") {
  CHECK(parseOverrides("").list.empty());
  CHECK(parseOverrides("  ").error.empty());
  const auto ok = parseOverrides(" membership = debug ,engine=warn,http=off");
  REQUIRE(ok.error.empty());
  REQUIRE(ok.list.size() == 3);
  CHECK(ok.list[0].logger == "membership");
  CHECK(ok.list[0].level == Level::debug);
  CHECK(ok.list[1].logger == "engine");
  CHECK(ok.list[1].level == Level::warn);
  CHECK(ok.list[2].level == Level::off);
  for (const char* bad : {"membership", "membership=", "=debug", "membrship=debug", "engine=loud", "engine=warn,",
                          "engine=warn,,http=info"}) {
    const auto r = parseOverrides(bad);
    CAPTURE(bad);
    CHECK_FALSE(r.error.empty());
    CHECK(r.list.empty());
  }
  CHECK(parseOverrides("x=debug").error == "unknown logger 'x' (loggers: node, engine, membership, transport, bridge, http)");
}

TEST_CASE("jsonEscape: quotes - backslashes - control characters - UTF-8 kept - invalid bytes replaced") {
  CHECK(jsonEscape("plain text [t=17]") == "plain text [t=17]");
  CHECK(jsonEscape("say \"hi\"") == "say \\\"hi\\\"");
  CHECK(jsonEscape("a\\b") == "a\\\\b");
  CHECK(jsonEscape("line1\nline2\r\tend") == "line1\\nline2\\r\\tend");
  CHECK(jsonEscape(std::string("nul\0bell\x07", 9)) == "nul\\u0000bell\\u0007");
  CHECK(jsonEscape("\x1f\x7f") == "\\u001f\\u007f");
  CHECK(jsonEscape("Zürich → 東京 🚀") == "Zürich → 東京 🚀");  // 2-, 3- and 4-byte sequences pass through
  CHECK(jsonEscape("bad \xff byte") == "bad \\ufffd byte");
  CHECK(jsonEscape("cut \xe6\x9d") == "cut \\ufffd\\ufffd");      // a sequence cut short at the end
  CHECK(jsonEscape("\xc0\xaf") == "\\ufffd\\ufffd");               // overlong '/'
  CHECK(jsonEscape("\xed\xa0\x80") == "\\ufffd\\ufffd\\ufffd");    // a UTF-16 surrogate
  CHECK(jsonEscape("\xf4\x90\x80\x80") == "\\ufffd\\ufffd\\ufffd\\ufffd");  // above U+10FFFF
}

TEST_CASE("a JSON line is one object with ts - level - logger - node and the message - which parses back") {
  const std::string msg = "member 2 \"x\"\nsecond line \\ Zürich \xff";
  const std::string line = formatLine(Format::Json, kTime, Level::warn, "membership", PeerId{3}, msg);
  REQUIRE(line.back() == '\n');
  CHECK(line.find('\n') == line.size() - 1);  // one line, whatever the message holds
  const auto j = nlohmann::json::parse(line);
  CHECK(j.size() == 5);
  CHECK(j["ts"] == "2026-11-26T17:03:00.123Z");
  CHECK(j["level"] == "warn");
  CHECK(j["logger"] == "membership");
  CHECK(j["node"] == 3);
  CHECK(j["msg"] == "member 2 \"x\"\nsecond line \\ Zürich \xef\xbf\xbd");
  CHECK(line.rfind("{\"ts\":\"2026-11-26T17:03:00.123Z\",\"level\":\"warn\",\"logger\":\"membership\",\"node\":3,", 0) == 0);
  CHECK(nlohmann::json::parse(formatLine(Format::Json, kTime, Level::info, "node", std::nullopt, "x"))["node"].is_null());
}

TEST_CASE("a text line is the timestamp - the level - the logger and today's message after 'node N: '") {
  CHECK(formatLine(Format::Text, kTime, Level::info, "node", PeerId{0}, "training from round 0 with 4 members") ==
        "2026-11-26T17:03:00.123Z info  [node] node 0: training from round 0 with 4 members\n");
  CHECK(formatLine(Format::Text, kTime, Level::err, "http", std::nullopt, "http server: boom") ==
        "2026-11-26T17:03:00.123Z error [http] http server: boom\n");
  // Before the epoch the milliseconds stay in [0, 999].
  CHECK(formatLine(Format::Text, Clock::time_point(std::chrono::milliseconds(-1)), Level::debug, "node", std::nullopt, "") ==
        "1969-12-31T23:59:59.999Z debug [node] \n");
}

TEST_CASE("Loggers: one sink for all - start levels with overrides - run-time changes - bad options refused") {
  auto sink = std::make_shared<LinesSink>();
  Options o;
  o.level = "warn";
  o.levels = "membership=debug";
  o.node = 7;
  Loggers loggers(o, sink);
  for (auto name : kLoggerNames) CHECK(loggers.get(name)->name() == name);
  CHECK_THROWS_AS((void)loggers.get("nope"), std::out_of_range);

  loggers.get("node")->info("hidden");
  loggers.get("node")->warn("shown {}", 1);
  loggers.get("membership")->debug("member {} joined", 2);
  loggers.get("engine")->debug("hidden");
  REQUIRE(sink->lines.size() == 2);
  CHECK(sink->lines[0].find(" warn  [node] node 7: shown 1\n") != std::string::npos);
  CHECK(sink->lines[1].find(" debug [membership] node 7: member 2 joined\n") != std::string::npos);

  CHECK(loggers.levelsJson() ==
        R"({"node":"warn","engine":"warn","membership":"debug","transport":"warn","bridge":"warn","http":"warn"})");
  CHECK(loggers.setLevel("engine", Level::trace));
  CHECK_FALSE(loggers.setLevel("nope", Level::trace));
  loggers.get("engine")->trace("now shown");
  CHECK(sink->lines.size() == 3);
  CHECK(loggers.setLevel("*", Level::off));
  loggers.get("membership")->error("hidden");
  CHECK(sink->lines.size() == 3);
  CHECK(loggers.setLevel("", Level::info));
  CHECK(nlohmann::json::parse(loggers.levelsJson())["transport"] == "info");

  o.level = "loud";
  CHECK_THROWS_AS(Loggers(o, sink), ConfigError);
  o.level = "info";
  o.levels = "engine";
  CHECK_THROWS_AS(Loggers(o, sink), ConfigError);
  CHECK(parseFormat("json") == Format::Json);
  CHECK_THROWS_AS((void)parseFormat("xml"), ConfigError);
  nullLogger()->error("dropped");  // and does not crash
}

TEST_CASE("applyLevelRequest: one logger - every logger - and each mistake refused with 400 and no change") {
  Loggers loggers(Options{}, std::make_shared<LinesSink>());
  auto a = applyLevelRequest(loggers, "logger=membership&level=debug");
  CHECK(a.status == 200);
  CHECK(nlohmann::json::parse(a.body)["membership"] == "debug");
  CHECK(nlohmann::json::parse(a.body)["node"] == "info");
  a = applyLevelRequest(loggers, "level=warn");
  CHECK(a.status == 200);
  CHECK(loggers.levelsJson().find("info") == std::string::npos);
  CHECK(applyLevelRequest(loggers, "level=trace&logger=*").body.find("warn") == std::string::npos);
  const std::string before = loggers.levelsJson();
  for (const char* bad : {"", "logger=http", "level=loud", "level=warning", "level=info&logger=nope", "level=info&x=1",
                          "level"}) {
    CAPTURE(bad);
    a = applyLevelRequest(loggers, bad);
    CHECK(a.status == 400);
    CHECK(a.body.find('\n') == a.body.size() - 1);
  }
  CHECK(loggers.levelsJson() == before);
}

}  // namespace
}  // namespace gossip::logging
