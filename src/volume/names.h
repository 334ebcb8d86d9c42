// Every name agent-init gives or expects on the state volume, in one place.
//
//   STATE/run                  the agent's run directory (run layout)
//   STATE/data/run             the same in the state layout (STATE is STATE_PATH)
//   STATE/data/install, tmp    7.x state layout: symlinks into the image
//   STATE/fleet.enc, vault ...  the state layout's Config (CONFIG_PATH = STATE)
//   STATE/home                 run layout: the agent's HOME (Top = Config) as
//                              the volume keeps it (volume/config_home.h)
//   STATE/versioned-home       run layout: the versioned home's own files
//                              (action_store.yml, ...) under --supervise
//   STATE/.agent-init/         agent-init's bookkeeping:
//     lock, owner, journal, history, layout, chowned
//     snapshots/<name>/        (.partial, .old while a snapshot is made)
//     conflicts/<id>/, displaced/<id>/, migrate/{incoming,partial}, restore.partial,
//     carry/ (files being carried onto the volume), home-files
#pragma once

namespace agent_init::names {

inline constexpr const char* kRun = "run";
inline constexpr const char* kData = "data";
inline constexpr const char* kDataRun = "data/run";  // the state layout's run directory
inline constexpr const char* kInstall = "install";
inline constexpr const char* kTmp = "tmp";
inline constexpr const char* kInstalledMarker = ".installed";
inline constexpr const char* kHome = "home";
inline constexpr const char* kVersionedHome = "versioned-home";

inline constexpr const char* kBookkeeping = ".agent-init";
inline constexpr const char* kLock = "lock";
inline constexpr const char* kOwner = "owner";
inline constexpr const char* kJournal = "journal";
inline constexpr const char* kHistory = "history";
inline constexpr const char* kLayoutRecord = "layout";  // the layout that last used the volume
inline constexpr const char* kChowned = "chowned";
inline constexpr const char* kSnapshots = "snapshots";
inline constexpr const char* kSnapshotPartial = ".partial";  // in snapshots/: a copy being made
inline constexpr const char* kSnapshotOld = ".old";          // in snapshots/: the one being replaced
inline constexpr const char* kSnapshotOrder = ".order";      // in snapshots/: the order they were taken
inline constexpr const char* kRestorePartial = "restore.partial";
inline constexpr const char* kBeforeRestore =
    "before-restore";  // snapshots/before-restore-<time>-<pid>: what a restore replaced
inline constexpr const char* kConflicts = "conflicts";
inline constexpr const char* kDisplaced = "displaced";
inline constexpr const char* kMigrate = "migrate";
inline constexpr const char* kMigrateIncoming = "migrate/incoming";
inline constexpr const char* kMigratePartial = "partial";  // in migrate/
inline constexpr const char* kIncoming = "incoming";       // in migrate/
inline constexpr const char* kCarry = "carry";              // files being carried onto the volume
inline constexpr const char* kHomeFiles = "home-files";     // the image's files STATE/home holds copies of

}  // namespace agent_init::names
