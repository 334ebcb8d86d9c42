// agent-init --supervise against the acceptance cases (tests/supervise), as
// PID 1 of a fresh PID namespace and as a child subreaper.
#include <gtest/gtest.h>

#include "binary.h"
#include "home_fixture.h"
#include "init_cases.h"
#include "namespace.h"
#include "temp_dir.h"

namespace agent_init {
namespace {

struct Placement {
  const char* name;
  bool pid1;
};

class SuperviseNs : public ::testing::TestWithParam<std::tuple<Placement, size_t>> {};

TEST_P(SuperviseNs, Case) {
  REQUIRE_MOUNT_NAMESPACE();
  auto [placement, index] = GetParam();
  const test::InitCase& c = test::AllCases()[index];
  test::TempDir t;
  test::Make711Home(t / "home");
  test::MakeDirs(t / "state");
  test::InitFlavour f;
  f.name = "agent-init";
  f.pid1 = placement.pid1;
  f.agent_init = true;
  f.drop_hup = {"--signal-map", "HUP:0"};
  f.workdir = t.path();
  f.prefix = {test::AgentInitBinary(), "--home", t / "home",    "--state", t / "state", "--method", "symlink",
              "--lock-timeout",        "5",      "--supervise", "--grace", "2",         "--"};
  test::CaseResult r = c.run(f);
  ASSERT_TRUE(r.applies) << r.detail;
  EXPECT_TRUE(r.ok) << c.what << ": " << r.detail;
}

std::vector<size_t> CaseIndexes() {
  std::vector<size_t> out;
  for (size_t i = 0; i < test::AllCases().size(); ++i) out.push_back(i);
  return out;
}

INSTANTIATE_TEST_SUITE_P(All, SuperviseNs,
                         ::testing::Combine(::testing::Values(Placement{"pid1", true},
                                                              Placement{"subreaper", false}),
                                            ::testing::ValuesIn(CaseIndexes())),
                         [](const auto& param_info) {
                           return std::string(std::get<0>(param_info.param).name) + "_" +
                                  test::AllCases()[std::get<1>(param_info.param)].name;
                         });

}  // namespace
}  // namespace agent_init
