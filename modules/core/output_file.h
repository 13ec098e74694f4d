#pragma once
// Files the user asks a run to write (--json, --csv, --vcd, --timeline,
// --dump-platform): each is checked before anything is built or simulated,
// so a mistyped folder costs no simulation, and every write is checked, so
// a full disk is an error, not an empty or truncated file and exit 0.
#include <iosfwd>
#include <string>

namespace incsim {

// Throws UserError unless `path` can be opened for writing: "cannot write
// the results file 'x/y.json' (its folder does not exist)". It is opened
// without truncating it; a file it had to create is removed again. `what`
// names the file's role ("results file").
void check_writable(const std::string& path, const std::string& what);

// Writes `text` to `path` ("-": stdout), checking the write and the close.
void write_user_file(const std::string& path, const std::string& text, const std::string& what);

// Copies `in` to `path`, checking every write and the close, as write_user_file.
void copy_to_user_file(std::istream& in, const std::string& path, const std::string& what);

// Throws UserError if `os` failed (a write to a full device): flushes it
// first. `what` names it in the message ("the table on stdout").
void check_stream(std::ostream& os, const std::string& what);

}  // namespace incsim
