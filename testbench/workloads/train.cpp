#include "train.h"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <numeric>
#include <ostream>
#include <sstream>

#include "core/error.h"
#include "core/param.h"
#include "core/units.h"
#include "gpu/compute_engine.h"
#include "training/astra_workload.h"
#include "training/layer_file.h"
#include "training/zoo.h"

namespace incsim::tb {

namespace {
const Param<uint64_t> kBucketBytes{
    "train.bucket_bytes", 25ull << 20, Range::at_least(1).at_most(1ull << 40),
    "gradients are all-reduced in buckets as the backward pass fills them, last layer first; a bucket closes once "
    "it holds this many bytes (PyTorch DDP's bucket_cap_mb, 25 MiB); 1: one all-reduce per layer, as Klenk §VI-E "
    "and MultiTree §VI-C overlap them"};
const Param<bool> kOverlap{"train.overlap", true, Range::none(),
                           "all-reduce the buckets while the backward pass goes on; false: one all-reduce of every "
                           "gradient after it (Klenk §VI-E's one-shot)"};

// --model transformer's shape; the defaults are GPT-3 XL's (Brown et al. 2020, Table 2.1).
const training::DecoderShape kGpt3Xl;
const Param<uint32_t> kLayers{"transformer.layers", kGpt3Xl.layers, Range::at_least(1).at_most(1024),
                              "--model transformer: decoder blocks (GPT-3 XL: 24)"};
const Param<uint32_t> kHidden{"transformer.hidden", kGpt3Xl.hidden, Range::at_least(1).at_most(1 << 17),
                              "--model transformer: hidden size (GPT-3 XL: 2048)"};
const Param<uint32_t> kHeads{"transformer.heads", kGpt3Xl.heads, Range::at_least(1).at_most(1024),
                             "--model transformer: attention heads, dividing the hidden size (GPT-3 XL: 16)"};
const Param<uint32_t> kSequence{"transformer.sequence", kGpt3Xl.sequence, Range::at_least(1).at_most(1 << 20),
                                "--model transformer: tokens per sample (GPT-3 XL: 2048)"};
const Param<uint32_t> kVocabulary{"transformer.vocabulary", kGpt3Xl.vocabulary, Range::at_least(1).at_most(1 << 24),
                                  "--model transformer: vocabulary (GPT-2 and GPT-3's BPE: 50257)"};

const Param<double> kAstraClock{"train.astra_clock_ghz", 1.0, Range::above(0).at_most(100),
                                "the clock an ASTRA-sim workload file's cycles count (ASTRA-sim's system layer "
                                "ticks 1 cycle per ns: 1 GHz)"};

using Phase = gpu::ComputeEngine::Phase;
sc_core::sc_time seconds(double s) { return sc_core::sc_time(s, sc_core::SC_SEC); }
double us(const sc_core::sc_time& t) { return t.to_seconds() * 1e6; }
// 97.5 MiB: a size that is no whole number of units.
std::string mib(uint64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << static_cast<double>(bytes) / (1 << 20) << " MiB";
  return os.str();
}
bool ends_with(const std::string& s, const std::string& end) {
  return s.size() > end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}
bool is_file(const std::string& name) { return name.find('/') != std::string::npos || ends_with(name, ".yaml"); }
}  // namespace

// One iteration of one algorithm in flight: kernels queued on every GPU,
// buckets reduced in order as they fill.
struct TrainWorkload::Iteration {
  Iteration(size_t a, CollectiveWorkload& c, bool r) : algorithm(a), coll(c), record(r) {}
  size_t algorithm;
  CollectiveWorkload& coll;
  bool record;
  sc_core::sc_time t0, t_end;
  std::vector<int> waiting;  // [bucket]: backward kernels of its layers still to end on some GPU; 0: ready
  size_t next = 0;             // the bucket to reduce next
  bool reducing = false;
  sc_core::sc_time comm_start;
  double comm_us = 0;
  uint64_t wrong = 0;
  int backward_left = 0, update_left = 0;
  bool updating = false, done = false;
  std::function<void()> step;  // starts what is ready: the next bucket, the optimizer step
};

TrainWorkload::TrainWorkload(const Options& o, Config& cfg) : opt_(o) {
  refuse_options(opt_, {"traffic", "load"}, "applies to synthetic traffic, not to training");
  if (opt_.was_given("collective") && opt_.collective != "allreduce")
    throw UserError("training all-reduces its gradients; --collective " + opt_.collective + " is not for --workload train");
  if (opt_.was_given("sizes")) throw UserError("--sizes is for collectives; training's sizes are its gradient buckets");
  if (!opt_.jobs.empty()) throw UserError("a jobs: list runs collectives; training runs one data-parallel job");
  if (opt_.model.empty())
    throw UserError("--workload train needs --model: " + training::name_list(training::zoo_names()) +
                    ", or a YAML layer list");
  precision_ = training::parse_precision(opt_.precision);
  if (precision_ != training::Precision::fp32)
    throw UserError("--precision " + opt_.precision + ": the switch ALUs, NICs and aggregators add float32 and int32 "
                    "only, so gradients are fp32 (fp16 and bf16 come with their ALUs)");
  training::ZooOptions shape;
  if (opt_.model == "transformer")
    shape.decoder = {cfg.get(kLayers), cfg.get(kHidden), cfg.get(kHeads), cfg.get(kSequence), cfg.get(kVocabulary)};
  // ASTRA-sim's text workloads (FILE.txt) bring their own times.
  const bool astra = ends_with(opt_.model, ".txt");
  double astra_update_s = 0;
  if (astra)
    model_ = training::data_parallel_model(training::read_astra_workload(opt_.model), opt_.model,
                                           cfg.get(kAstraClock) * 1e9, astra_update_s);
  else
    model_ = is_file(opt_.model) ? training::read_layer_file(opt_.model) : training::zoo_model(opt_.model, shape);
  if (model_.parameters() == 0) throw UserError("model '" + model_.name + "' has no weights, so nothing to all-reduce");
  compute_ = training::make_compute_model(opt_.compute);
  for (const auto& layer : model_.layers)
    times_.push_back(training::layer_times(*compute_, layer, opt_.batch, precision_));
  // The optimizer step: one fused elementwise kernel over the weights
  // (SGD: read weights and gradients, write weights).
  training::Layer step;
  step.name = "optimizer";
  step.kind = training::LayerKind::elementwise;
  step.forward_flops = 2.0 * static_cast<double>(model_.parameters());
  step.input_elements = 2.0 * static_cast<double>(model_.parameters());
  step.output_elements = static_cast<double>(model_.parameters());
  update_ = seconds(astra ? astra_update_s : compute_->compute(step, 1, precision_).forward_s);

  // Buckets fill from the last layer back, as the backward pass makes them.
  overlap_ = cfg.get(kOverlap);
  const uint64_t bucket_bytes = cfg.get(kBucketBytes);
  const uint64_t cap = overlap_ ? bucket_bytes : ~0ull;
  bucket_of_.assign(model_.layers.size(), -1);
  uint64_t open = 0;
  for (size_t k = model_.layers.size(); k-- > 0;) {
    const uint64_t bytes = model_.layers[k].gradient_bytes(precision_);
    if (bytes == 0) continue;
    if (buckets_.empty() || open >= cap) buckets_.push_back(0), open = 0;
    buckets_.back() += bytes;
    open += bytes;
    bucket_of_[k] = static_cast<int>(buckets_.size()) - 1;
  }

  const topo::Topology t =
      opt_.topology ? *opt_.topology : platforms::make_topology(opt_.platform, platform_shape(opt_), cfg);
  const int built = static_cast<int>(t.endpoints().size());
  const int n = opt_.gpus && !platforms::is_dgx1(t) ? *opt_.gpus : built;
  if (n < 2 || n > built)
    throw UserError("platform '" + t.name + "' has " + std::to_string(built) + " GPUs and data parallelism needs 2 or "
                    "more: --gpus must be between 2 and " + std::to_string(built) + ", not " + std::to_string(n));
  algorithms_.push_back(opt_.algorithm.empty() ? default_algorithm("allreduce") : opt_.algorithm);
  if (!opt_.baseline.empty()) {
    if (opt_.baseline == algorithms_[0])
      throw UserError("--baseline " + opt_.baseline + " is the --algorithm too; name another to compare with");
    algorithms_.push_back(opt_.baseline);
  }
  // One machine for both.
  platform_ = std::make_unique<platforms::Platform>(t, cfg, opt_.seed, CollectiveWorkload::defaults_for(t, algorithms_));
  std::vector<int> gpus(n);
  std::iota(gpus.begin(), gpus.end(), 0);
  const CollectiveWorkload::Share share{platform_.get(), gpus};
  std::string sizes;
  for (uint64_t b : buckets_) sizes += (sizes.empty() ? "" : ",") + std::to_string(b);
  for (size_t a = 0; a < algorithms_.size(); ++a) {
    Options oc = opt_;
    oc.collective = "allreduce";
    oc.algorithm = algorithms_[a];
    oc.sizes = sizes;
    try {
      collectives_.push_back(std::make_unique<CollectiveWorkload>(oc, cfg, &share));
    } catch (const UserError& e) {
      throw UserError((a ? "--baseline " : "--algorithm ") + algorithms_[a] + ": " + e.what());
    }
  }
  for (int g = 0; g < n; ++g) platform_->gpus()[g]->compute().use();
  spawn_method("train_launch", [this] {
    launch_.fired();
    if (running_) running_->step();
  }, &launch_.event);

  schema_->add({"algorithm", "", ColumnKind::Setting, "algorithm", "", 10})
      .add({"iteration", "", ColumnKind::Setting, "iteration", "", 10})
      .add({"time_us", "us", ColumnKind::Measurement, "iteration", "(us)", 12, 1})
      .add({"compute_us", "us", ColumnKind::Measurement, "compute", "(us)", 12, 1})
      .add({"comm_us", "us", ColumnKind::Measurement, "comm", "(us)", 12, 1})
      .add({"exposed_us", "us", ColumnKind::Measurement, "exposed", "(us)", 12, 1})
      .add({"buckets", "", ColumnKind::Setting, "buckets", "", 8});
  if (algorithms_.size() > 1) schema_->add({"speedup", "", ColumnKind::Measurement, "speedup", "(x)", 8, 2});
  schema_->add({"wrong", "elements", ColumnKind::Measurement, "#wrong", "", 9});
}

TrainWorkload::~TrainWorkload() = default;

Row TrainWorkload::iterate(size_t a, uint32_t iteration, Runner& run, bool record) {
  CollectiveWorkload& coll = *collectives_[a];
  const auto& gpus = coll.gpus();
  const int n = static_cast<int>(gpus.size());
  running_ = std::make_unique<Iteration>(a, coll, record);
  Iteration& it = *running_;
  it.t0 = sc_core::sc_time_stamp();
  it.waiting.assign(buckets_.size(), 0);
  for (int b : bucket_of_)
    if (b >= 0) it.waiting[b] += n;
  it.backward_left = n * static_cast<int>(model_.layers.size());
  const auto span = [this, &it](int track, std::string name, const sc_core::sc_time& took) {
    if (!it.record) return;
    const double end = us(sc_core::sc_time_stamp());
    spans_.push_back({static_cast<int>(it.algorithm), track, std::move(name), end - us(took), end});
  };
  // The buckets in order, each once every GPU has its gradients and the one
  // before has been reduced.
  std::function<void()> reduce, finish;
  reduce = [&, this] {
    if (it.reducing || it.next == buckets_.size() || it.waiting[it.next] > 0) return;
    it.reducing = true;
    it.comm_start = sc_core::sc_time_stamp();
    coll.start(it.next, [&, this] {
      const sc_core::sc_time took = sc_core::sc_time_stamp() - it.comm_start;
      std::ostringstream ignored;
      const Row row = coll.finish(it.next, ignored);
      it.wrong += row.wrong();
      it.comm_us += us(took);
      if (it.record) {
        // The links' utilisation while the bucket was reduced: the mean over
        // the links that carried any of it, and the busiest.
        const auto& ends = platform_->link_ends();
        double sum = 0, most = 0;
        int used = 0;
        for (size_t k = 0; k < ends.size(); ++k) {
          if (row.link_bytes[k] == 0) continue;
          const double u = static_cast<double>(row.link_bytes[k]) / (ends[k].port->bw_GBps() * us(took) * 1e3);
          sum += u;
          most = std::max(most, u);
          ++used;
        }
        const double start = us(it.comm_start), end = us(sc_core::sc_time_stamp());
        counters_.push_back({static_cast<int>(it.algorithm), start, used ? sum / used : 0.0, most});
        counters_.push_back({static_cast<int>(it.algorithm), end, 0.0, 0.0});
      }
      span(n, "all-reduce bucket " + std::to_string(it.next) + " (" + mib(buckets_[it.next]) + ")", took);
      it.reducing = false;
      ++it.next;
      // The next bucket starts from the launcher: this call comes from inside
      // the collective, which starting it again would tear down.
      launch_.after(sc_core::SC_ZERO_TIME);
    });
  };
  // After the backward pass and the last all-reduce: the optimizer step on every GPU.
  finish = [&, this] {
    if (it.updating || it.backward_left > 0 || it.next < buckets_.size()) return;
    it.updating = true;
    it.update_left = n;
    for (int g = 0; g < n; ++g)
      gpus[g]->compute().run(Phase::Update, -1, update_, [&, g, span] {
        span(g, "optimizer", update_);
        if (--it.update_left > 0) return;
        it.done = true;
        it.t_end = sc_core::sc_time_stamp();
        sc_core::sc_pause();
      });
  };
  it.step = [&] {
    reduce();
    finish();
  };
  const size_t layers = model_.layers.size();
  for (int g = 0; g < n; ++g) {
    gpu::ComputeEngine& c = gpus[g]->compute();
    for (size_t k = 0; k < layers; ++k) {
      const sc_core::sc_time f = seconds(times_[k].forward_s);
      c.run(Phase::Forward, static_cast<int>(k), f, [&, g, k, f, span] { span(g, model_.layers[k].name, f); });
    }
    for (size_t k = layers; k-- > 0;) {
      const sc_core::sc_time b = seconds(times_[k].backward_s);
      c.run(Phase::Backward, static_cast<int>(k), b, [&, g, k, b, span] {
        span(g, model_.layers[k].name + " backward", b);
        --it.backward_left;
        // A bucket is ready when every GPU has every gradient in it.
        if (bucket_of_[k] >= 0) --it.waiting[bucket_of_[k]];
        reduce();
        finish();
      });
    }
  }
  run.run_until([&] { return it.done || !coll.error().empty(); },
                algorithms_[a] + " iteration " + std::to_string(iteration + 1));
  if (!coll.error().empty()) throw UserError(coll.error() + " during " + algorithms_[a] + "'s all-reduces");
  double compute = 0;
  for (const auto& t : times_) compute += t.forward_s + t.backward_s;
  compute = compute * 1e6 + us(update_);
  const double time = us(it.t_end - it.t0);
  Row r(schema_);
  r.set("algorithm", algorithms_[a])
      .set("iteration", static_cast<uint64_t>(iteration + 1))
      .set("time_us", time)
      .set("compute_us", compute)
      .set("comm_us", it.comm_us)
      .set("exposed_us", std::max(0.0, time - compute))
      .set("buckets", static_cast<uint64_t>(buckets_.size()))
      .set("wrong", it.wrong);
  running_.reset();
  return r;
}

std::vector<Row> TrainWorkload::run_point(size_t i, Runner& run, std::ostream&) {
  uint64_t warmup_wrong = 0;
  if (i == 0)
    for (uint32_t w = 0; w < opt_.warmup; ++w)
      for (size_t a = 0; a < collectives_.size(); ++a) warmup_wrong += iterate(a, w, run, false).wrong();
  std::vector<Row> rows;
  const bool record = !opt_.timeline.empty() && i + 1 == points();  // the last iteration
  for (size_t a = 0; a < collectives_.size(); ++a) rows.push_back(iterate(a, static_cast<uint32_t>(i), run, record));
  rows[0].set("wrong", rows[0].wrong() + warmup_wrong);  // a warm-up's wrong elements count too
  if (rows.size() > 1) {
    rows[0].set("speedup", rows[1]["time_us"] / rows[0]["time_us"]);
    rows[1].set("speedup", 1.0);
  }
  if (record) write_timeline();
  return rows;
}

// Chrome's trace-event format (Perfetto, chrome://tracing): a process per
// algorithm, a thread per GPU's compute and one for the all-reduces, and a
// counter of the links' utilisation during each all-reduce; times in us.
void TrainWorkload::write_timeline() const {
  using json = nlohmann::ordered_json;
  json events = json::array();
  const int n = static_cast<int>(collectives_[0]->gpus().size());
  for (size_t a = 0; a < algorithms_.size(); ++a) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", a}, {"args", {{"name", algorithms_[a]}}}});
    for (int g = 0; g <= n; ++g)
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", a}, {"tid", g},
                        {"args", {{"name", g < n ? "gpu" + std::to_string(g) + ".compute" : std::string("all-reduces")}}}});
  }
  for (const Span& s : spans_)
    events.push_back({{"name", s.name}, {"ph", "X"}, {"pid", s.algorithm}, {"tid", s.track}, {"ts", s.start_us},
                      {"dur", s.end_us - s.start_us}});
  for (const Counter& c : counters_)
    events.push_back({{"name", "link utilisation"}, {"ph", "C"}, {"pid", c.algorithm}, {"ts", c.ts},
                      {"args", {{"mean", c.mean}, {"busiest", c.busiest}}}});
  std::ofstream f(opt_.timeline);
  if (!f) throw UserError("cannot write the timeline '" + opt_.timeline + "'");
  f << json{{"traceEvents", events}, {"displayTimeUnit", "ns"}}.dump(1) << "\n";
}

void TrainWorkload::print_header(std::ostream& os) const {
  const auto& t = platform_->topology();
  const int n = static_cast<int>(collectives_[0]->gpus().size());
  double forward = 0, backward = 0;
  for (const auto& x : times_) forward += x.forward_s, backward += x.backward_s;
  os << std::fixed << std::setprecision(1) << "# incsim: training " << model_.name << " ("
     << static_cast<double>(model_.parameters()) / 1e6 << "M parameters, "
     << mib(model_.gradient_bytes(precision_)) << " of " << training::to_string(precision_)
     << " gradients), data parallel on " << n << " of " << t.endpoints().size() << " GPUs, platform " << t.name
     << ", seed " << opt_.seed << "\n"
     << "# compute: " << compute_->describe() << "; batch " << opt_.batch << " per GPU: forward " << forward * 1e3
     << " ms, backward " << backward * 1e3 << " ms, optimizer " << update_.to_seconds() * 1e3 << " ms\n"
     << "# gradients: " << count_of(buckets_.size(), "all-reduce", "all-reduces") << " per iteration ("
     << (overlap_ ? "buckets of train.bucket_bytes, each as soon as the backward pass fills it" : "one, after the backward pass")
     << "), by " << algorithms_[0] << (algorithms_.size() > 1 ? ", and by " + algorithms_[1] + " for the baseline" : "")
     << "\n";
  for (size_t a = 0; a < collectives_.size(); ++a) {
    std::ostringstream mine;
    collectives_[a]->print_header(mine);
    std::istringstream in(mine.str());
    for (std::string line; std::getline(in, line);)
      if (line.rfind("# incsim: ", 0) != 0) os << "#   " << algorithms_[a] << ": " << line.substr(2) << "\n";
  }
  os << "# exposed: the iteration's time beyond its compute, the communication nothing hid\n";
}

void TrainWorkload::config_json(nlohmann::ordered_json& config) const {
  config["workload"] = "train";
  config["model"] = model_.name;
  config["parameters"] = model_.parameters();
  config["batch"] = opt_.batch;
  config["precision"] = training::to_string(precision_);
  config["compute"] = opt_.compute;
  config["algorithm"] = algorithms_[0];
  if (algorithms_.size() > 1) config["baseline"] = algorithms_[1];
  config["gpus"] = collectives_[0]->gpus().size();
  config["buckets_bytes"] = buckets_;
  config["iterations"] = opt_.iterations;
  config["warmup"] = opt_.warmup;
}

sc_core::sc_time TrainWorkload::default_stall_timeout() const {
  sc_core::sc_time t = sc_core::SC_ZERO_TIME;
  for (const auto& c : collectives_) t = std::max(t, c->default_stall_timeout());
  return t;
}

// Backward kernels and buckets done, of all.
double TrainWorkload::done_fraction() const {
  if (!running_) return -1;
  const double kernels = static_cast<double>(running_->coll.gpus().size() * model_.layers.size());
  return (kernels - running_->backward_left + static_cast<double>(running_->next)) /
         (kernels + static_cast<double>(buckets_.size()));
}

void TrainWorkload::trace(sc_core::sc_trace_file* tf) const {
  for (const auto& c : collectives_) c->trace(tf);
}

}  // namespace incsim::tb
