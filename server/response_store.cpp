// Bounded LRU map of stored Responses API answers.
#include "server/response_store.h"

namespace anelm::server {

ResponseStore::ResponseStore(size_t max_entries, size_t max_bytes) : max_entries_(max_entries), max_bytes_(max_bytes) {}

void ResponseStore::erase_locked(
    std::unordered_map<std::string, std::list<std::pair<std::string, Entry>>::iterator>::iterator it) {
  bytes_ -= cost(it->second->first, it->second->second);
  lru_.erase(it->second);
  index_.erase(it);
}

bool ResponseStore::put(const std::string& id, Entry entry) {
  const size_t c = cost(id, entry);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(id); it != index_.end()) erase_locked(it);
  if (c > max_bytes_ || max_entries_ == 0) return false;
  lru_.emplace_front(id, std::move(entry));
  index_[id] = lru_.begin();
  bytes_ += c;
  while (lru_.size() > max_entries_ || bytes_ > max_bytes_) erase_locked(index_.find(lru_.back().first));
  return true;
}

std::optional<ResponseStore::Entry> ResponseStore::get(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

bool ResponseStore::erase(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(id);
  if (it == index_.end()) return false;
  erase_locked(it);
  return true;
}

size_t ResponseStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

size_t ResponseStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

ResponseStore& response_store() {
  static ResponseStore store;
  return store;
}

}  // namespace anelm::server
