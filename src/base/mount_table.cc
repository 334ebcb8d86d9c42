#include "base/mount_table.h"

#include <libmount/libmount.h>

#include <cstdio>
#include <memory>

namespace agent_init {
namespace {

struct TableDeleter {
  void operator()(libmnt_table* t) const { mnt_unref_table(t); }
};
struct IterDeleter {
  void operator()(libmnt_iter* i) const { mnt_free_iter(i); }
};
struct FileDeleter {
  void operator()(FILE* f) const { std::fclose(f); }
};
using TablePtr = std::unique_ptr<libmnt_table, TableDeleter>;
using IterPtr = std::unique_ptr<libmnt_iter, IterDeleter>;

std::string Str(const char* s) { return s ? std::string(s) : std::string(); }

bool HasOption(const std::string& optstr, const char* name) {
  return !optstr.empty() && mnt_optstr_get_option(optstr.c_str(), name, nullptr, nullptr) == 0;
}

Result<std::vector<Mount>> Collect(libmnt_table* table) {
  IterPtr iter(mnt_new_iter(MNT_ITER_FORWARD));
  if (!iter) return Fail(Kind::kCannotPlace, "read mount table: out of memory");
  std::vector<Mount> out;
  libmnt_fs* fs = nullptr;
  while (mnt_table_next_fs(table, iter.get(), &fs) == 0) {
    Mount m;
    m.id = static_cast<std::uint64_t>(mnt_fs_get_id(fs));
    m.parent_id = static_cast<std::uint64_t>(mnt_fs_get_parent_id(fs));
    m.target = Str(mnt_fs_get_target(fs));
    m.root = Str(mnt_fs_get_root(fs));
    m.fstype = Str(mnt_fs_get_fstype(fs));
    m.source = Str(mnt_fs_get_source(fs));
    m.vfs_options = Str(mnt_fs_get_vfs_options(fs));
    m.fs_options = Str(mnt_fs_get_fs_options(fs));
    m.noexec = HasOption(m.vfs_options, "noexec");
    m.readonly = HasOption(m.vfs_options, "ro");
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

Result<MountTable> MountTable::Read() {
  TablePtr table(mnt_new_table());
  if (!table) return Fail(Kind::kCannotPlace, "read mount table: out of memory");
  int rc = mnt_table_parse_file(table.get(), kSelf);
  if (rc != 0) {
    return std::unexpected(MakeError(Kind::kCannotPlace, rc < 0 ? -rc : 0, "read mount table " + Q(kSelf),
                                     "agent-init needs /proc mounted"));
  }
  auto mounts = Collect(table.get());
  if (!mounts) return std::unexpected(mounts.error());
  MountTable out;
  out.mounts_ = std::move(*mounts);
  return out;
}

Result<MountTable> MountTable::Parse(std::string_view mountinfo) {
  std::string text(mountinfo);
  std::unique_ptr<FILE, FileDeleter> f(fmemopen(text.data(), text.size(), "r"));
  if (!f) return SysFail(errno, "parse mount table");
  TablePtr table(mnt_new_table());
  if (!table) return Fail(Kind::kCannotPlace, "parse mount table: out of memory");
  if (mnt_table_parse_stream(table.get(), f.get(), "mountinfo") != 0) {
    return Fail(Kind::kCannotPlace, "parse mount table: malformed mountinfo text");
  }
  auto mounts = Collect(table.get());
  if (!mounts) return std::unexpected(mounts.error());
  MountTable out;
  out.mounts_ = std::move(*mounts);
  return out;
}

const Mount* MountTable::ById(std::uint64_t id) const {
  for (const auto& m : mounts_)
    if (m.id == id) return &m;
  return nullptr;
}

const Mount* MountTable::Covering(std::string_view path) const {
  const Mount* best = nullptr;
  for (const auto& m : mounts_) {
    std::string_view t = m.target;
    bool covers =
        t == "/" || path == t || (path.starts_with(t) && path.size() > t.size() && path[t.size()] == '/');
    if (covers && (best == nullptr || t.size() >= best->target.size())) best = &m;
  }
  return best;
}

size_t MountTable::CountAt(std::string_view target) const {
  size_t n = 0;
  for (const auto& m : mounts_)
    if (m.target == target) ++n;
  return n;
}

}  // namespace agent_init
