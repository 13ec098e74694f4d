#pragma once
// Byte sizes as architects write them: 8K, 64M, 1G (powers of two), or plain bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace incsim {

// Parses "8K", "64M", "4096"; throws UserError naming `what` if it is not a positive size.
uint64_t parse_size(const std::string& text, const std::string& what);
// "8K:64M" doubles from 8 KiB to 64 MiB; "8K,1M,64M" is a list.
std::vector<uint64_t> parse_sizes(const std::string& text);
// Inverse of parse_size for labels: 8192 -> "8K".
std::string size_label(uint64_t bytes);
// `text`'s words after `line` (a first line's start, padded to where the
// words begin), broken before `width` columns, each next line indented by
// `indent` spaces; every line ends in a newline.
std::string wrap(std::string line, const std::string& text, size_t indent, size_t width = 100);
// "1 switch", "2 switches": a count and its noun, singular for one.
std::string count_of(uint64_t n, const std::string& one, const std::string& many);

}  // namespace incsim
