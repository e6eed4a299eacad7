// The Responses API's stored responses (store: true): what GET /v1/responses/{id} returns and what a
// later request's previous_response_id continues. In memory, bounded in count and bytes, evicting
// the least recently used; a server restart forgets everything (as documented in http-api.md).
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace anelm::server {

class ResponseStore {
 public:
  static constexpr size_t kDefaultMaxEntries = 1024;
  static constexpr size_t kDefaultMaxBytes = 64u << 20;

  struct Entry {
    std::string response;      // the Response object as JSON text (GET's body)
    std::string conversation;  // JSON array of the items a continuation starts from
  };

  explicit ResponseStore(size_t max_entries = kDefaultMaxEntries, size_t max_bytes = kDefaultMaxBytes);

  // Stores (or replaces) `id`, then evicts the least recently used entries until within bounds.
  // Returns false, storing nothing, when the entry alone is larger than the byte bound.
  bool put(const std::string& id, Entry entry);
  // The entry, marked as most recently used; nullopt when unknown (never stored, evicted, deleted).
  std::optional<Entry> get(const std::string& id);
  bool erase(const std::string& id);

  size_t size() const;
  size_t bytes() const;
  size_t max_bytes() const { return max_bytes_; }

 private:
  static size_t cost(const std::string& id, const Entry& e) { return id.size() + e.response.size() + e.conversation.size(); }
  void erase_locked(std::unordered_map<std::string, std::list<std::pair<std::string, Entry>>::iterator>::iterator it);

  const size_t max_entries_, max_bytes_;
  mutable std::mutex mu_;
  std::list<std::pair<std::string, Entry>> lru_;  // most recently used first
  std::unordered_map<std::string, std::list<std::pair<std::string, Entry>>::iterator> index_;
  size_t bytes_ = 0;
};

// The process's store (one served model per process).
ResponseStore& response_store();

}  // namespace anelm::server
