// disk_cache.cpp — the disk cache of compiled kernels (see disk_cache.h).
#include "jit/disk_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ember::jit {

uint64_t fnv1a64(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

namespace {

const char* kEntryMagic = "ember-jit-entry 1";

// mkdir -p with mode 0700 for every folder it creates.
bool make_folders(const std::string& path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string prefix = path.substr(0, slash);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) return false;
    if (slash == std::string::npos) return true;
  }
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

CacheFolder open_cache_folder() {
  std::string path = env("EMBER_CACHE_DIR");
  if (path.empty() && !env("XDG_CACHE_HOME").empty()) path = env("XDG_CACHE_HOME") + "/ember";
  if (path.empty() && !env("HOME").empty()) path = env("HOME") + "/.cache/ember";
  if (path.empty()) return {"", "neither EMBER_CACHE_DIR, XDG_CACHE_HOME nor HOME is set"};
  if (!make_folders(path))
    return {"", "cannot create the cache folder " + path + ": " + std::strerror(errno)};
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    return {"", "the cache folder " + path + " is not a folder"};
  if (info.st_uid != ::getuid())
    return {"", "the cache folder " + path + " belongs to another user"};
  if ((info.st_mode & 0077) != 0 && ::chmod(path.c_str(), 0700) != 0)
    return {"", "cannot make the cache folder " + path + " private (mode 0700)"};
  return {path, ""};
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return bytes.str();
}

bool write_file_atomically(const std::string& path, const std::string& bytes) {
  static std::atomic<uint64_t> counter{0};
  const std::string temporary =
      path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return false;
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n <= 0) break;
    written += size_t(n);
  }
  const bool ok = ::close(fd) == 0 && written == bytes.size() &&
                  std::rename(temporary.c_str(), path.c_str()) == 0;
  if (!ok) std::remove(temporary.c_str());
  return ok;
}

std::optional<std::string> cache_load(const std::string& folder, const std::string& key,
                                      const std::string& kind) {
  const std::string base = folder + "/" + hex64(fnv1a64(key));
  const std::optional<std::string> entry = read_file(base + ".entry");
  if (!entry) return std::nullopt;
  // "<magic>\n<artifact hash>\n<key>"
  const size_t first = entry->find('\n');
  const size_t second = first == std::string::npos ? first : entry->find('\n', first + 1);
  if (second == std::string::npos || entry->compare(0, first, kEntryMagic) != 0 ||
      entry->compare(second + 1, std::string::npos, key) != 0)
    return std::nullopt;
  const std::string recorded_hash = entry->substr(first + 1, second - first - 1);
  std::optional<std::string> artifact = read_file(base + "." + kind);
  if (!artifact || hex64(fnv1a64(*artifact)) != recorded_hash) return std::nullopt;
  return artifact;
}

bool cache_store(const std::string& folder, const std::string& key, const std::string& kind,
                 const std::string& artifact) {
  const std::string base = folder + "/" + hex64(fnv1a64(key));
  // The artifact first: a reader that finds the new entry file finds its artifact too, and one
  // that reads an old entry beside a new artifact sees the hash differ and rebuilds.
  return write_file_atomically(base + "." + kind, artifact) &&
         write_file_atomically(base + ".entry", std::string(kEntryMagic) + "\n" +
                                                    hex64(fnv1a64(artifact)) + "\n" + key);
}

}  // namespace ember::jit
