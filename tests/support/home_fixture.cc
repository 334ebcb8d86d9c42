#include "home_fixture.h"

#include "temp_dir.h"

namespace agent_init::test {

HomeFixture& HomeFixture::VersionedHome(const std::string& name, const std::vector<std::string>& subdirs) {
  MakeDirs(Vh(name), 0755);
  for (const auto& sub : subdirs) MakeDirs(Vh(name) + "/" + sub, 0755);
  WriteFile(Vh(name) + "/elastic-agent", "#!/bin/sh\nexit 0\n", 0755);
  return *this;
}

HomeFixture& HomeFixture::HomeSymlink(const std::string& target) {
  Symlink(target, Path("elastic-agent"));
  return *this;
}

HomeFixture& HomeFixture::File(const std::string& rel, const std::string& content) {
  WriteFile(Path(rel), content, 0644);
  return *this;
}

HomeFixture Make711Home(const std::string& home) {
  HomeFixture f(home);
  f.VersionedHome("elastic-agent-9b2fec", {"downloads", "install", "run"});
  f.HomeSymlink(home + "/data/elastic-agent-9b2fec/elastic-agent");
  f.File(".build_hash.txt", "9b2fec7a1b2c3d4e5f60718293a4b5c6d7e8f901\n");
  MakeDirs(home + "/data/tmp", 0770);
  return f;
}

Config Config711(const std::string& root, Mode mode) {
  Make711Home(root + "/home");
  MakeDirs(root + "/state");
  Config config;
  config.home = root + "/home";
  config.state = root + "/state";
  config.mode = mode;
  return config;
}

HomeFixture MakeSimHome(const std::string& home, const std::string& vh, const std::vector<std::string>& dirs,
                        const std::string& sim) {
  HomeFixture f(home);
  f.VersionedHome(vh, dirs);
  const std::string binary = ReadFile(sim);
  WriteFile(f.Vh(vh) + "/elastic-agent", binary, 0755);
  for (const auto& d : dirs) {
    if (d == "downloads" || d == "components") WriteFile(f.Vh(vh) + "/" + d + "/metricbeat", binary, 0755);
  }
  f.HomeSymlink(f.Vh(vh) + "/elastic-agent");
  // The standalone configuration the image ships (the agent's -c default).
  f.File("elastic-agent.yml", "outputs:\n  default:\n    type: elasticsearch\n");
  MakeDirs(home + "/data/tmp");
  return f;
}

void MakeImages(const std::string& root, const std::vector<std::string>& vhs,
                const std::vector<std::string>& subdirs) {
  for (const auto& vh : vhs) {
    HomeFixture f(root + "/image-" + vh);
    f.VersionedHome(vh, subdirs);
    f.HomeSymlink(f.Vh(vh) + "/elastic-agent");
  }
}

}  // namespace agent_init::test
