#include "image/exec_places.h"

#include <gtest/gtest.h>

namespace agent_init {
namespace {

Place MakePlace(std::string role, std::string path, std::uint64_t id, std::uint64_t dev, std::string target,
                std::string root, bool noexec) {
  Place p;
  p.role = std::move(role);
  p.path = std::move(path);
  p.real_path = p.path;
  p.mount_id = id;
  p.dev = dev;
  p.found_mount = true;
  p.mount.id = id;
  p.mount.target = std::move(target);
  p.mount.root = std::move(root);
  p.mount.fstype = "ext4";
  p.mount.noexec = noexec;
  return p;
}

bool HasProblem(const PlacesReport& r, const std::string& code, const std::string& path) {
  for (const auto& p : r.problems)
    if (p.code == code && p.path == path) return true;
  return false;
}

TEST(ExecPlaces, HealthyContainer) {
  PlacesReport r;
  r.places = {MakePlace("state", "/h/state", 2, 81, "/h/state", "/var/lib/ea", true),
              MakePlace("versioned_home", "/h/data/vh", 1, 50, "/", "/", false),
              MakePlace("install", "/h/data/vh/install", 1, 50, "/", "/", false),
              MakePlace("tmp", "/h/data/tmp", 1, 50, "/", "/", false)};
  EvaluatePlaces(r);
  EXPECT_TRUE(r.problems.empty()) << r.problems.front().message;
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
}

// The workaround that breaks agents: a noexec hostPath over all of data/.
TEST(ExecPlaces, VolumeOverDataIsNoexecAndOnTheVolume) {
  PlacesReport r;
  r.places = {MakePlace("state", "/h/state", 2, 81, "/h/state", "/var/lib/ea/state", true),
              MakePlace("versioned_home", "/h/data/vh", 3, 81, "/h/data", "/var/lib/ea/state/data", true),
              MakePlace("tmp", "/h/data/tmp", 3, 81, "/h/data", "/var/lib/ea/state/data", true)};
  EvaluatePlaces(r);
  EXPECT_TRUE(HasProblem(r, "exec-on-volume", "/h/data/vh"));
  EXPECT_TRUE(HasProblem(r, "exec-on-volume", "/h/data/tmp"));
}

TEST(ExecPlaces, NoexecImagePlace) {
  PlacesReport r;
  r.places = {MakePlace("state", "/h/state", 2, 81, "/h/state", "/var/lib/ea", true),
              MakePlace("versioned_home", "/h/data/vh", 1, 50, "/", "/", false),
              MakePlace("components", "/h/data/vh/components", 7, 60, "/h/data/vh/components", "/", true)};
  EvaluatePlaces(r);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].code, "noexec");
  EXPECT_NE(r.problems[0].message.find("/h/data/vh/components"), std::string::npos);
}

TEST(ExecPlaces, SameDeviceDifferentDirectoriesIsNotTheVolume) {
  // An emptyDir and a hostPath on the node's one disk.
  PlacesReport r;
  r.places = {
      MakePlace("state", "/h/state", 2, 81, "/h/state", "/var/lib/ea/state", false),
      MakePlace("versioned_home", "/h/data/vh", 3, 81, "/h/data", "/var/lib/kubelet/pods/x/data", false)};
  EvaluatePlaces(r);
  EXPECT_TRUE(r.problems.empty());
}

// A host directory as the volume, the image copied to another directory of
// the same disk (the demo, and a node whose emptyDir and hostPath share /).
TEST(ExecPlaces, VolumeDirectoryOnTheRootDiskIsNotTheWholeDisk) {
  PlacesReport r;
  r.places = {MakePlace("state", "/c/h/state", 2, 81, "/c/h/state", "/tmp/hostpath", true),
              MakePlace("versioned_home", "/c/h/data/vh", 1, 81, "/", "/", false)};
  EvaluatePlaces(r);
  EXPECT_TRUE(r.problems.empty()) << r.problems.front().message;
}

TEST(ExecPlaces, SecondBindOfTheVolumeIsTheVolume) {
  PlacesReport r;
  r.places = {MakePlace("state", "/c/h/state", 2, 81, "/c/h/state", "/srv/vol", true),
              MakePlace("tmp", "/c/h/data/tmp", 5, 81, "/c/h/data", "/srv/vol/data", false)};
  EvaluatePlaces(r);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].code, "exec-on-volume");
}

TEST(ExecPlaces, TmpAndInstallOnDifferentMountsPredictsExdev) {
  PlacesReport r;
  r.places = {MakePlace("state", "/h/state", 2, 81, "/h/state", "/s", false),
              MakePlace("versioned_home", "/h/data/vh", 1, 50, "/", "/", false),
              MakePlace("install", "/h/data/vh/install", 1, 50, "/", "/", false),
              MakePlace("tmp", "/h/data/tmp", 9, 50, "/h/data/tmp", "/", false)};
  EvaluatePlaces(r);
  EXPECT_TRUE(r.problems.empty());
  ASSERT_TRUE(r.exdev);
  EXPECT_NE(r.exdev->message.find("EXDEV"), std::string::npos);
}

TEST(ExecPlaces, StateOnRootFilesystemIsAWarning) {
  PlacesReport r;
  r.places = {MakePlace("state", "/h/state", 1, 50, "/", "/", false),
              MakePlace("versioned_home", "/h/data/vh", 1, 50, "/", "/", false)};
  EvaluatePlaces(r);
  EXPECT_TRUE(r.problems.empty());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("not on a volume"), std::string::npos);
}

}  // namespace
}  // namespace agent_init
