#include "nearest.h"

#include <algorithm>
#include <cctype>

namespace incsim {

namespace {
bool same(char a, char b) {  // case aside
  return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
}

size_t edits(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (same(a[i - 1], b[j - 1]) ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}
}  // namespace

std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_edits = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    // A prefix of a longer name counts as close (switch.latency -> switch.latency_ns).
    const size_t e = c.size() > word.size() && c.compare(0, word.size(), word) == 0 && word.size() >= 4
                         ? 1
                         : edits(word, c);
    if (e < best_edits) {
      best_edits = e;
      best = c;
    }
  }
  return best;
}

std::string nearest_in_list(const std::string& word, const std::string& list) {
  std::vector<std::string> names;
  for (size_t at = 0; at < list.size();) {
    const size_t end = std::min(list.find(", ", at), list.size());
    names.push_back(list.substr(at, end - at));
    at = end + 2;
  }
  return nearest(word, names);
}

std::string to_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace incsim
