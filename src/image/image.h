// Opening the agent's image: the first step of both prepare and inspect.
// The home (--home), its data directory, the versioned home that discovery
// decides, opened.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/dir.h"
#include "base/error.h"
#include "image/versioned_home.h"

namespace agent_init {

struct Image {
  Dir home;
  Dir data;             // HOME/data
  Discovery discovery;  // what decided, with its warnings
  Dir vh;               // HOME/data/<versioned home>
};

/// Where opening the image stopped.
struct ImageFailure {
  Error error;            // as the step reported it
  std::string path;       // what it concerns
  std::string_view step;  // for prepare's message: "", "find versioned home", "open versioned home"

  /// The error with its step in front, as prepare reports it.
  Error Wrapped() const;
};

struct OpenedImage {
  Image image;  // what was opened before any failure
  std::optional<ImageFailure> failure;
};

/// Opens the home at `home`, its data directory, and the versioned home that
/// discovery decides (`forced`: --versioned-home; `listing`: see Discover).
/// kNameOnly leaves the versioned home unopened (prepare --seed-data opens
/// it in the copy instead).
enum class VersionedHomeOpen { kOpen, kNameOnly };
OpenedImage OpenImage(const std::string& home, const std::string& forced, Listing listing,
                      VersionedHomeOpen vh = VersionedHomeOpen::kOpen);

/// A refusal on permissions at `path` in the image (the agent's home, its
/// data directory, the versioned home), explained: who agent-init runs as,
/// the owner and mode found there and how to run it so that it may (as root
/// with --user, or in the group that owns the home). Other errors come back
/// as they are.
Error ExplainImageDenial(Error e, const std::string& path);

/// HOME/data, as the agent sees it, for the agent's home at `home`.
std::string ImageDataPath(const std::string& home);

}  // namespace agent_init
