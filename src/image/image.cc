#include "image/image.h"

#include <fcntl.h>

#include "base/access.h"

namespace agent_init {
namespace {

constexpr const char* kData = "data";

Result<Dir> OpenHome(const std::string& path) {
  auto home = Dir::OpenTrusted(path, Kind::kLayout);
  if (!home) {
    Error e = home.error();
    if (IsPermissionError(e.err)) return std::unexpected(ExplainImageDenial(e, path));
    e.hint = "set --home / AGENT_INIT_HOME to the agent's install directory (the one holding data/)";
    return std::unexpected(e);
  }
  return home;
}

// HOME/data is part of the image (or a copy of it): a symlink there is the
// operator's choice and is followed (the versioned homes inside must be real
// directories).
Result<Dir> OpenImageData(const Dir& home) {
  int fd = ::openat(home.fd(), kData, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (IsPermissionError(err)) {
      return std::unexpected(ExplainImageDenial(
          MakeError(Kind::kDenied, err, "open " + Q(home.PathOf(kData))), home.PathOf(kData)));
    }
    return std::unexpected(MakeError(Kind::kLayout, err, "open " + Q(home.PathOf(kData)),
                                     "is " + Q(home.path()) +
                                         " the agent's home? Set --home / AGENT_INIT_HOME to the directory "
                                         "that holds data/elastic-agent-<hash>"));
  }
  return Dir(UniqueFd(fd), home.PathOf(kData));
}

}  // namespace

Error ExplainImageDenial(Error e, const std::string& path) {
  if (!IsPermissionError(e.err)) return e;
  const std::string ids = SelfIds();
  e.kind = Kind::kDenied;
  e.msg += ": agent-init runs as " + DescribeSelf() + " and " + Q(path) + " is " + DescribeOwnership(path);
  e.hint = "run this container as root (`--user 0`, runAsUser: 0) and give agent-init `--user " + ids +
           "` (it changes the image, then runs the agent as that user); or as a member of the group that "
           "owns the agent's home (Elastic's images up to 8.11 are written through group 0: `--group-add 0`, "
           "`supplementalGroups: [0]`; OpenShift runs its arbitrary uids with gid 0)";
  return e;
}

std::string ImageDataPath(const std::string& home) { return NormalizePath(home + "/" + kData); }

Error ImageFailure::Wrapped() const { return step.empty() ? error : Wrap(error, step); }

OpenedImage OpenImage(const std::string& home_path, const std::string& forced, Listing listing,
                      VersionedHomeOpen open_vh) {
  OpenedImage out;
  Image& image = out.image;
  // For messages only.
  auto data_path = [&] { return ImageDataPath(home_path); };
  auto home = OpenHome(home_path);
  if (!home) {
    out.failure = ImageFailure{home.error(), home_path, ""};
    return out;
  }
  image.home = std::move(*home);
  auto data = OpenImageData(image.home);
  if (!data) {
    image.discovery.data_path = data_path();
    image.discovery.error = data.error();
    out.failure = ImageFailure{data.error(), data_path(), "find versioned home"};
    return out;
  }
  image.data = std::move(*data);
  image.discovery = Discover(image.home, image.data, forced, listing);
  if (image.discovery.error) {
    out.failure = ImageFailure{*image.discovery.error, data_path(), "find versioned home"};
    return out;
  }
  if (open_vh == VersionedHomeOpen::kNameOnly) return out;
  const std::string& name = *image.discovery.versioned_home;
  auto vh = image.data.OpenSub(name);
  if (!vh) {
    out.failure = ImageFailure{ExplainImageDenial(vh.error(), image.data.PathOf(name)),
                               data_path() + "/" + name, "open versioned home"};
    return out;
  }
  image.vh = std::move(*vh);
  return out;
}

}  // namespace agent_init
