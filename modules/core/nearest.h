#pragma once
// "Did you mean": the candidate closest to a mistyped name.
#include <string>
#include <vector>

namespace incsim {

// The candidate with the fewest edits from `word` (Levenshtein), if within
// a third of the word's length (at least 2); "" when none is that close.
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace incsim
