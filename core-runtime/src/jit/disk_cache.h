// disk_cache.h — the disk cache of compiled kernels (internal header; see ember/jit.h).
//
// An entry is two files named by the hash of its key (source + compiler + flags + device):
//   <hash>.<kind>     the artifact (a shared object, a cubin)
//   <hash>.entry      "ember-jit-entry 1", the artifact's hash, then the whole key
// A lookup loads the artifact only when the recorded key equals the key asked for, byte for byte
// (so two keys of equal hash never share an entry), and the artifact's bytes hash to the recorded
// value (so a truncated or altered file is rebuilt). Both files are written under temporary names
// and renamed into place, so a reader in another process never sees half an entry.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace ember::jit {

// FNV-1a, 64 bits: a checksum against damaged entries and a file name, not a security measure
// (the folder is the user's own, mode 0700).
uint64_t fnv1a64(const std::string& bytes);
std::string hex64(uint64_t value);  // 16 lower-case hex digits

struct CacheFolder {
  std::string path;    // empty when no usable folder could be made
  std::string reason;  // why, when path is empty
};
// $EMBER_CACHE_DIR, else $XDG_CACHE_HOME/ember, else $HOME/.cache/ember: created with mode 0700
// (an existing folder of ours is narrowed to 0700); one owned by another user is refused.
CacheFolder open_cache_folder();

// The artifact stored under `key`, or nothing when there is no entry or it does not verify.
std::optional<std::string> cache_load(const std::string& folder, const std::string& key,
                                      const std::string& kind);
// Stores `artifact` under `key`; false (and nothing half-written) when the folder refuses it.
bool cache_store(const std::string& folder, const std::string& key, const std::string& kind,
                 const std::string& artifact);

// The whole contents of a file, or nothing when it cannot be read.
std::optional<std::string> read_file(const std::string& path);
// Writes `bytes` to `path` through a temporary file in the same folder and a rename.
bool write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace ember::jit
