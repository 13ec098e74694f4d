#pragma once
// One result row type and one writer for every workload: the table on
// stdout, --json and --csv. A workload describes its rows once (a Schema:
// each column's name, unit, kind and table format) and fills Rows; the
// writers need nothing else, so a new workload or a new measurement never
// needs a new writer. The JSON lists the schema as "columns", so the campaign
// tools tell settings from measurements by reading the results themselves.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

namespace incsim::tb {

enum class ColumnKind { Setting, Measurement };

struct Column {
  std::string name;  // JSON key and CSV heading, unit in the name where it has one (time_us)
  std::string unit;  // for the JSON's "columns" ("" where none)
  ColumnKind kind = ColumnKind::Measurement;
  // The table: heading, unit line ("(us)"), width and digits after the point;
  // width 0: not in the table; negative: a left-aligned word after two spaces.
  std::string heading, unit_label;
  int width = 0, precision = 0;
  double scale = 1;  // the table shows value x scale (a fraction as %)

  Column(std::string name, std::string unit, ColumnKind kind, std::string heading = "", std::string unit_label = "",
         int width = 0, int precision = 0, double scale = 1)
      : name(std::move(name)), unit(std::move(unit)), kind(kind), heading(std::move(heading)),
        unit_label(std::move(unit_label)), width(width), precision(precision), scale(scale) {}
};

using Value = std::variant<uint64_t, double, bool, std::string>;

class Schema {
 public:
  Schema& add(Column c);
  const std::vector<Column>& columns() const { return columns_; }
  size_t index(const std::string& name) const;  // throws std::out_of_range for a name it lacks
  bool has(const std::string& name) const;
 private:
  std::vector<Column> columns_;
};

// A row shares its schema, so rows outlive the workload that made them.
struct Row {
  std::shared_ptr<const Schema> schema;
  std::vector<Value> values;             // one per schema column, in its order
  nlohmann::ordered_json details;        // nested values only the JSON carries (reduction tables, ...)
  std::vector<uint64_t> link_bytes;      // bytes each link end sent during the row (Machine::link_ends order)
  std::vector<int> link_ids;             // as flows: the link directions (2 x link + direction) link_bytes counts

  explicit Row(std::shared_ptr<const Schema> s);
  Row& set(const std::string& name, Value v);
  // A numeric column as a double (tests and summaries).
  double operator[](const std::string& name) const;
  const Value& at(const std::string& name) const { return values[schema->index(name)]; }
  bool flag(const std::string& name) const { return std::get<bool>(at(name)); }
  // Wrong elements; 0 where none were simulated ("-", --fidelity flow).
  uint64_t wrong() const {
    return std::holds_alternative<std::string>(at("wrong")) ? 0 : static_cast<uint64_t>((*this)["wrong"]);
  }
};

// The table's two heading lines, preceded by "#\n".
void print_columns(std::ostream& os, const Schema& s);
void print_row(std::ostream& os, const Row& r);
// CSV of the rows' scalar columns, in schema order, with a heading line.
void write_csv(std::ostream& os, const Schema& s, const std::vector<Row>& rows);
// The schema as the JSON's "columns": [{name, unit, kind}].
nlohmann::ordered_json columns_json(const Schema& s);
// A row's scalar columns then its details, as a JSON object.
nlohmann::ordered_json row_json(const Row& r);

}  // namespace incsim::tb
