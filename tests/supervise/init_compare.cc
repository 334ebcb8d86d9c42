// Runs the supervisor acceptance cases against agent-init and the inits it
// is measured against (tini-static, dumb-init, catatonit), in both
// placements, and prints a Markdown table (scripts/compare-inits).
//   init_compare AGENT_INIT_BINARY [CASE_NAME]   (one case, by name, when given)
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include "init_cases.h"

using agent_init::test::AllCases;
using agent_init::test::InitFlavour;

namespace {

std::string MakeWorkdir() {
  char tmpl[] = "/tmp/agent-init-compare.XXXXXX";
  return ::mkdtemp(tmpl);
}

void AgentHome(const std::string& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir + "/home/data/elastic-agent-9b2fec");
  fs::create_directories(dir + "/state");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: init_compare AGENT_INIT_BINARY [CASE_NAME]\n");
    return 2;
  }
  struct Peer {
    std::string name;
    std::vector<std::string> pid1;
    std::vector<std::string> subreaper;
    bool agent_init;
    std::vector<std::string> drop_hup;
  };
  std::vector<Peer> peers{
      {"agent-init", {argv[1]}, {argv[1]}, true, {"--signal-map", "HUP:0"}},
      {"tini-static 0.19", {"/usr/bin/tini-static", "--"}, {"/usr/bin/tini-static", "-s", "--"}, false, {}},
      {"dumb-init 1.2.5",
       {"/usr/bin/dumb-init", "--"},
       {"/usr/bin/dumb-init", "--"},
       false,
       {"--rewrite", "1:0"}},
      {"catatonit 0.1.7", {"/usr/bin/catatonit", "--"}, {"/usr/bin/catatonit", "--"}, false, {}},
  };
  std::printf("| case |");
  for (const auto& p : peers) std::printf(" %s (PID 1) | %s (subreaper) |", p.name.c_str(), p.name.c_str());
  std::printf("\n|---|");
  for (size_t i = 0; i < peers.size(); ++i) std::printf("---|---|");
  std::printf("\n");
  for (const auto& c : AllCases()) {
    if (argc > 2 && std::string_view(argv[2]) != c.name) continue;  // one case, by hand
    std::printf("| %s |", c.what);
    for (const auto& p : peers) {
      for (bool pid1 : {true, false}) {
        InitFlavour f;
        f.name = p.name;
        f.pid1 = pid1;
        f.agent_init = p.agent_init;
        f.drop_hup = p.drop_hup;
        f.workdir = MakeWorkdir();
        if (p.agent_init) {
          AgentHome(f.workdir);
          f.prefix = {argv[1],
                      "--home",
                      f.workdir + "/home",
                      "--state",
                      f.workdir + "/state",
                      "--method",
                      "symlink",
                      "--log-level",
                      "error",
                      "--supervise",
                      "--grace",
                      "2",
                      "--"};
        } else {
          f.prefix = pid1 ? p.pid1 : p.subreaper;
        }
        auto r = c.run(f);
        std::string cell = !r.applies ? "n/a" : r.ok ? "yes" : "**no**: " + r.detail;
        std::printf(" %s |", cell.c_str());
        std::fflush(stdout);
        std::filesystem::remove_all(f.workdir);
      }
    }
    std::printf("\n");
  }
  return 0;
}
