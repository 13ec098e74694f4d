#pragma once
// "Did you mean": the candidate closest to a mistyped name.
#include <string>
#include <vector>

namespace incsim {

// The candidate with the fewest edits from `word` (Levenshtein, case aside:
// DGX2 is dgx2), if within a third of the word's length (at least 2); ""
// when none is that close.
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);
// The same among the names of a list such as "dgx2, star, torus".
std::string nearest_in_list(const std::string& word, const std::string& list);
// A name as typed, case aside (LL128 is ll128).
std::string to_lower(std::string s);

}  // namespace incsim
