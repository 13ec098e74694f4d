#include "results.h"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "core/error.h"
#include "core/param.h"

namespace incsim::tb {

Schema& Schema::add(Column c) {
  columns_.push_back(std::move(c));
  return *this;
}

size_t Schema::index(const std::string& name) const {
  for (size_t i = 0; i < columns_.size(); ++i)
    if (columns_[i].name == name) return i;
  throw std::out_of_range("no result column '" + name + "'");
}

bool Schema::has(const std::string& name) const {
  for (const auto& c : columns_)
    if (c.name == name) return true;
  return false;
}

Row::Row(std::shared_ptr<const Schema> s) : schema(std::move(s)), values(schema->columns().size(), Value{uint64_t{0}}) {}

Row& Row::set(const std::string& name, Value v) {
  values[schema->index(name)] = std::move(v);
  return *this;
}

double Row::operator[](const std::string& name) const {
  const Value& v = at(name);
  if (const auto* u = std::get_if<uint64_t>(&v)) return static_cast<double>(*u);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  throw std::invalid_argument("result column '" + name + "' is not a number");
}

void print_columns(std::ostream& os, const Schema& s) {
  std::ostringstream head, units;
  for (const auto& c : s.columns()) {
    if (c.width > 0) {
      head << std::setw(c.width) << c.heading;
      units << std::setw(c.width) << c.unit_label;
    } else if (c.width < 0) {
      head << "  " << c.heading;
    }
  }
  std::string u = units.str();
  while (!u.empty() && u.back() == ' ') u.pop_back();
  os << "#\n# " << head.str() << "\n# " << u << "\n";
  os.flush();
}

void print_row(std::ostream& os, const Row& r) {
  os << "  " << std::fixed;
  const auto& cols = r.schema->columns();
  for (size_t i = 0; i < cols.size(); ++i) {
    const Column& c = cols[i];
    if (c.width == 0) continue;
    if (c.width < 0) {
      os << "  ";
    } else {
      // A text as wide as its column (bfloat16 under type) is still set apart.
      const auto* text = std::get_if<std::string>(&r.values[i]);
      if (text && text->size() >= static_cast<size_t>(c.width)) os << ' ';
      os << std::setw(c.width);
    }
    std::visit([&](const auto& v) {
      using T = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<T, double>) os << std::setprecision(c.precision) << v * c.scale;
      else if constexpr (std::is_same_v<T, bool>) os << (v ? "true" : "false");
      else os << v;
    }, r.values[i]);
  }
  os << "\n";
  os.flush();
}

namespace {
std::string csv_cell(const Value& v) {
  if (const auto* u = std::get_if<uint64_t>(&v)) return std::to_string(*u);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const auto* d = std::get_if<double>(&v)) return shortest_text(*d);
  const std::string& s = std::get<std::string>(v);
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

nlohmann::ordered_json value_json(const Value& v) {
  return std::visit([](const auto& x) { return nlohmann::ordered_json(x); }, v);
}

// A row's details as CSV columns: each value inside an object, by its path
// (reduction_tables.hits); lists stay in the JSON.
using Cells = std::vector<std::pair<std::string, Value>>;
void flatten_details(const nlohmann::ordered_json& j, const std::string& name, Cells& out) {
  if (j.is_object())
    for (const auto& [k, v] : j.items()) flatten_details(v, name.empty() ? k : name + "." + k, out);
  else if (j.is_number_unsigned()) out.emplace_back(name, j.get<uint64_t>());
  else if (j.is_number()) out.emplace_back(name, j.get<double>());
  else if (j.is_boolean()) out.emplace_back(name, j.get<bool>());
  else if (j.is_string()) out.emplace_back(name, j.get<std::string>());
}
}  // namespace

void write_csv(std::ostream& os, const Schema& s, const std::vector<Row>& rows) {
  const auto& cols = s.columns();
  for (size_t i = 0; i < cols.size(); ++i) os << (i ? "," : "") << cols[i].name;
  // The details of every row, in the order they first appear: a workload's
  // rows all carry the same, a comparison's algorithms may not (push's tables).
  std::vector<Cells> details(rows.size());
  std::vector<std::string> names;
  for (size_t r = 0; r < rows.size(); ++r) {
    flatten_details(rows[r].details, "", details[r]);
    for (const auto& d : details[r])
      if (std::find(names.begin(), names.end(), d.first) == names.end()) names.push_back(d.first);
  }
  for (const auto& name : names) os << "," << name;
  os << "\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t i = 0; i < cols.size(); ++i) os << (i ? "," : "") << csv_cell(rows[r].values[i]);
    for (const auto& name : names) {
      const auto it = std::find_if(details[r].begin(), details[r].end(), [&](const auto& d) { return d.first == name; });
      os << "," << (it == details[r].end() ? "" : csv_cell(it->second));
    }
    os << "\n";
  }
}

nlohmann::ordered_json columns_json(const Schema& s) {
  nlohmann::ordered_json cols = nlohmann::ordered_json::array();
  for (const auto& c : s.columns())
    cols.push_back({{"name", c.name}, {"unit", c.unit}, {"kind", c.kind == ColumnKind::Setting ? "setting" : "measurement"}});
  return cols;
}

nlohmann::ordered_json row_json(const Row& r) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  const auto& cols = r.schema->columns();
  for (size_t i = 0; i < cols.size(); ++i) j[cols[i].name] = value_json(r.values[i]);
  if (r.details.is_object())
    for (const auto& [k, v] : r.details.items()) j[k] = v;
  return j;
}

}  // namespace incsim::tb
