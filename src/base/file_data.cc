#include "base/file_data.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace agent_init {
namespace {

// Plain read/write fallback for a range, when copy_file_range cannot be used.
Result<void> CopyRangeRw(int in, int out, off_t off, off_t len, const std::string& shown) {
  std::vector<char> buf(1 << 17);
  while (len > 0) {
    ssize_t n = ::pread(in, buf.data(), std::min<off_t>(len, static_cast<off_t>(buf.size())), off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return SysFail(errno, "read " + Q(shown));
    }
    if (n == 0) break;  // the file shrank under us; copy what there is
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::pwrite(out, buf.data() + done, static_cast<size_t>(n - done), off + done);
      if (w < 0) {
        if (errno == EINTR) continue;
        return SysFail(errno, "write copy of " + Q(shown));
      }
      done += w;
    }
    off += n;
    len -= n;
  }
  return {};
}

Result<void> CopyRange(int in, int out, off_t off, off_t len, const std::string& shown, bool& use_cfr) {
  while (len > 0 && use_cfr) {
    loff_t in_off = off, out_off = off;
    ssize_t n = ::copy_file_range(in, &in_off, out, &out_off, static_cast<size_t>(len), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP || errno == EPERM) {
        use_cfr = false;
        break;
      }
      return SysFail(errno, "copy " + Q(shown));
    }
    if (n == 0) return {};
    off += n;
    len -= n;
  }
  if (len > 0) return CopyRangeRw(in, out, off, len, shown);
  return {};
}

}  // namespace

Result<std::uint64_t> CopyFileData(int in, int out, off_t size, blkcnt_t blocks, const std::string& shown,
                                   DataPaths& paths, bool* reflinked) {
  *reflinked = false;
  if (size == 0) return 0;
  if (paths.reflink) {
    if (::ioctl(out, FICLONE, in) == 0) {
      *reflinked = true;
      return static_cast<std::uint64_t>(size);
    }
    if (errno == EOPNOTSUPP || errno == EXDEV || errno == EINVAL || errno == ENOTTY) paths.reflink = false;
  }
  bool& use_cfr = paths.cfr;
  // A file whose blocks cover its size has no holes: one range, no seeking.
  if (blocks * 512 >= size) {
    auto r = CopyRange(in, out, 0, size, shown, use_cfr);
    if (!r) return std::unexpected(r.error());
    return static_cast<std::uint64_t>(size);
  }
  off_t pos = 0;
  while (pos < size) {
    off_t data = ::lseek(in, pos, SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break;  // only a hole is left
      // No SEEK_DATA support: copy everything.
      auto r = CopyRange(in, out, pos, size - pos, shown, use_cfr);
      if (!r) return std::unexpected(r.error());
      pos = size;
      break;
    }
    off_t hole = ::lseek(in, data, SEEK_HOLE);
    if (hole < 0 || hole > size) hole = size;
    auto r = CopyRange(in, out, data, hole - data, shown, use_cfr);
    if (!r) return std::unexpected(r.error());
    pos = hole;
  }
  if (::ftruncate(out, size) < 0) return SysFail(errno, "size copy of " + Q(shown));
  return static_cast<std::uint64_t>(size);
}

}  // namespace agent_init
