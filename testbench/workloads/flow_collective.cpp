#include "flow_collective.h"

#include <algorithm>
#include <ostream>
#include <sstream>
#include <tuple>
#include <utility>

#include "choices.h"
#include "collective_workload.h"
#include "collectives/bounds.h"
#include "core/error.h"
#include "core/units.h"
#include "platforms/platform.h"
#include "topology/cluster.h"

namespace incsim::tb {

void refuse_packet_outputs(const Options& o, bool timeline) {
  for (const auto& [given, what] : {std::pair{"vcd", "a VCD of packets"}, std::pair{"timeline", "a timeline of the blocks"},
                                    std::pair{"dump-platform", "the packet-level machine's graph"}})
    if (o.was_given(given) && (timeline || std::string(given) != "timeline"))
      throw UserError(std::string("--") + given + " shows " + what + ", which --fidelity flow does not build");
}

FlowCollectiveWorkload::FlowCollectiveWorkload(const Options& o, Config& cfg, const Share* share,
                                               const collectives::Synthesis* fixed)
    : opt_(o), cfg_(cfg) {
  *schema_ = nccl_schema();
  schema_->add({"flows", "flows", ColumnKind::Measurement});
  if (!share) refuse_packet_outputs(opt_, true);
  refuse_options(opt_, {"hosts", "ring", "racks", "hosts-per-rack", "machines", "gpus-per-machine", "load"},
                 "does not apply to a collective");
  CollectiveChoice choice = choose_collective(opt_, share && !share->sizes.empty() ? &share->sizes : nullptr);
  std::tie(dtype_, redop_, sizes_) = std::tie(choice.dtype, choice.redop, choice.sizes);
  file_algorithm_ = std::move(choice.file_algorithm);
  algorithm_ = choice.algorithm;

  if (!share) own_graph_ = opt_.topology ? *opt_.topology : platforms::make_topology(opt_.platform, platform_shape(opt_), cfg_);
  graph_ = share ? &share->platform->graph : &own_graph_;
  const topo::Topology& t = *graph_;
  const bool roce = topo::is_roce_cluster(t);
  if (roce)
    for (const Param<double>* p : {&platforms::kLinkLoss, &platforms::kLinkCorruption})
      if (cfg_.get(*p) > 0)
        throw UserError(p->key() + " drops frames for go-back-N to resend, which --fidelity flow does not simulate");
  const std::vector<int> gpus = collective_gpus(opt_, choice, t, share ? &share->gpus : nullptr);
  const collectives::Collective c = choice.collective;
  collectives::Site site = platforms::site(t, opt_.platform, c, gpus, share != nullptr, cfg_);
  if (const std::string why = algorithm_->cannot_run(site); !why.empty()) throw UserError(why);
  const platforms::PlatformDefaults d =
      share ? share->platform->defaults : platforms::platform_defaults(t, {algorithm_->needs(t, c)});
  if (share) {
    machine_ = &share->platform->machine;
    engines_ = share->engines;
  } else {
    own_machine_ = platforms::flow_machine(t, cfg_, d);
    machine_ = &own_machine_;
  }
  site.packet_payload = machine_->formats.front().max_payload;
  site.packet_header = machine_->formats.front().header;
  collectives::Synthesis synthesis = fixed ? *fixed : algorithm_->synthesize(site);
  if (const auto tuner = fixed ? nullptr : algorithm_->tuner(site, synthesis)) {
    if (tuner->runs() > 1)
      throw UserError("--fidelity flow: " + opt_.algorithm +
                      " tunes itself over several runs of each size, which flows do not run; run it at packet level");
    per_size(*tuner, share);
  }
  call_ = std::make_unique<platforms::FlowCall>(platforms::FlowCall::On{t, *machine_, d, gpus, share ? share->platform : nullptr}, *algorithm_,
                                                 site, std::move(synthesis), dtype_, redop_, cfg_, opt_.seed, opt_.algorithm);
}

FlowCollectiveWorkload::~FlowCollectiveWorkload() = default;

// Each size's program as the tuner chooses it, run by a workload of its
// own per choice; the notes are what packet level prints per row.
void FlowCollectiveWorkload::per_size(collectives::Tuner& tuner, const Share* share) {
  for (const uint64_t bytes : sizes_) {
    const collectives::Synthesis s = tuner.next(0, bytes);
    Choice c{tuner.choice(), tuner.ran(0, 0, 0), nullptr};
    std::unique_ptr<FlowCollectiveWorkload>& w = by_choice_[c.name];
    if (!w) w = std::make_unique<FlowCollectiveWorkload>(opt_, cfg_, share, &s);
    c.runs = w.get();
    choices_.push_back(std::move(c));
  }
}

double FlowCollectiveWorkload::done_fraction() const {
  if (running_choice_) return running_choice_->done_fraction();
  return fraction_ ? (*fraction_)() : -1;
}

void FlowCollectiveWorkload::print(const std::string& what, std::ostream& os) const {
  print_collective(what, call_->program(), call_->nic() ? &call_->nic()->schedule() : nullptr, call_->trees_text(), opt_, os);
}

std::vector<Row> FlowCollectiveWorkload::run_point(size_t i, Runner& run, std::ostream& notes) {
  if (!choices_.empty()) {
    const Choice& c = choices_[i];
    std::ostringstream own;
    running_choice_ = c.runs;
    std::vector<Row> rows = c.runs->run_point(i, run, own);
    running_choice_ = nullptr;
    notes << c.note << own.str();
    rows.front().details["choice"] = c.name;
    return rows;
  }
  const flow::Executor::Result* res = nullptr;
  run.run_plain("size " + size_label(sizes_[i]), [&](const Runner::Poll& poll) {
    res = &call_->alone(sizes_[i], [&](const std::function<double()>& fraction, double now_ns) {
      fraction_ = &fraction;
      poll(now_ns / 1e3);
      fraction_ = nullptr;
    });
  });
  return {row(i, *res, notes)};
}

void FlowCollectiveWorkload::start(size_t i, std::function<void()> on_done) {
  if (choices_.empty()) return call_->start(sizes_[i], std::move(on_done));
  running_choice_ = choices_[i].runs;
  choices_[i].runs->start(i, std::move(on_done));
}

uint64_t FlowCollectiveWorkload::progress() {
  uint64_t ns = call_->progress_ns();
  for (const auto& [name, w] : by_choice_) ns += w->progress();
  return ns;
}

Row FlowCollectiveWorkload::finish(size_t i, std::ostream& notes) {
  if (choices_.empty()) return row(i, call_->ran(), notes);
  Row r = choices_[i].runs->finish(i, notes);
  r.details["choice"] = choices_[i].name;
  return r;
}

Row FlowCollectiveWorkload::row(size_t i, const flow::Executor::Result& res, std::ostream& notes) const {
  const uint64_t bytes = sizes_[i];
  const platforms::Measures m = call_->measures(res, bytes);
  Row r(schema_);
  fill_nccl(r, bytes, elements::dtype_name(dtype_), m.redop, m.time_us, m.busbw_factor, 0, m.bound_us);
  r.set("wrong", std::string("-"));  // no element values travel (docs/flow.md)
  r.set("flows", res.flows);
  call_->note(notes, res);
  if (res.classes > 0)
    r.details["channel_classes"] = {{"channels", res.channels}, {"parts", res.parts}, {"classes", res.classes}};
  if (res.pass_ns > 0)
    r.details["steady_passes"] = {{"passes", res.passes},
                                  {"simulated", res.simulated_passes},
                                  {"steady_from", res.steady_from},
                                  {"pass_ns", res.pass_ns},
                                  {"halves_differ", res.period_change}};
  return r;
}

void FlowCollectiveWorkload::print_header(std::ostream& os) const {
  const topo::Topology& t = *graph_;
  os << "# incsim: " << opt_.collective << " " << opt_.algorithm << " on " << call_->program().ranks << " of "
     << t.endpoints().size() << " GPUs, platform " << t.name << " (" << count_of(t.switches().size(), "switch", "switches")
     << ", " << t.links().size() << " links), seed " << opt_.seed << "\n";
  call_->describe_fidelity(os);
  // The cross-check holds flows to packet level on the built-in platforms only.
  if (t.from_file && !opt_.check_fidelity)
    os << "# fidelity: flows are checked against packet level on the built-in platforms, not on a platform file: "
          "--check-fidelity runs packet level beside them at the smallest size\n";
  call_->describe(os, sizes_.back(), file_algorithm_ ? "the program" : opt_.algorithm);
}

void FlowCollectiveWorkload::config_json(nlohmann::ordered_json& config) const {
  config["fidelity"] = "flow";
  config["collective"] = opt_.collective;
  config["algorithm"] = opt_.algorithm;
  config["gpus"] = call_->program().ranks;
  config["dtype"] = elements::dtype_name(dtype_);
  config["sizes"] = opt_.sizes;
}

}  // namespace incsim::tb
