#pragma once
// How long a layer computes: forward, and backward (the input gradient and
// the weight gradient, two kernels). Two models: a roofline for GPUs and
// SCALE-Sim's output-stationary systolic array for MultiTree's TPU-like
// accelerator. docs/training.md says what each assumes.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "training/model.h"

namespace incsim::training {

struct LayerTimes {
  double forward_s = 0;
  double backward_s = 0;
  double input_grad_after_s = 0;  // MeasuredTimes::input_grad_after_s
};

class ComputeModel {
 public:
  virtual ~ComputeModel() = default;
  // The layer's times for `batch` samples on one device. A layer with
  // measured times gets those instead (layer_times below).
  virtual LayerTimes compute(const Layer& layer, uint32_t batch, Precision p) const = 0;
  virtual std::string describe() const = 0;
  // The streaming multiprocessors a kernel spreads over, of which a
  // collective on the GPU's cores takes one per thread block while it runs;
  // 0: the device has none (collectives take nothing from its compute).
  virtual int sms() const { return 0; }
};

// The measured times when the layer has them, else the model's.
LayerTimes layer_times(const ComputeModel& model, const Layer& layer, uint32_t batch, Precision p);

// A GPU as a roofline: a kernel takes max(FLOPs / (peak x efficiency),
// bytes / memory bandwidth) plus a launch overhead. Backward is two kernels
// (input gradient, weight gradient), each with the forward pass's FLOPs and
// bytes: 2x the forward FLOPs, the usual convention (e.g. Kaplan et al.
// 2020, §2.1: 6N per token for training, 2N forward).
struct Roofline {
  std::string name;
  double peak_fp32_flops = 0;  // dense, per second
  double peak_fp16_flops = 0;  // dense tensor cores
  double peak_bf16_flops = 0;  // 0: the device has no bf16
  double memory_bytes_per_s = 0;
  int sms = 0;  // streaming multiprocessors (the architecture whitepapers)
  // The fraction of peak a training kernel reaches. 0.5: Megatron-LM reaches
  // 52% of A100 peak over a whole GPT run (Narayanan et al., SC 2021, §5.1).
  double efficiency = 0.5;
  double launch_s = 6e-6;  // per kernel, Klenk §VI-E

  double peak_flops(Precision p) const;
};

class RooflineModel : public ComputeModel {
 public:
  explicit RooflineModel(Roofline device) : d_(std::move(device)) {}
  LayerTimes compute(const Layer& layer, uint32_t batch, Precision p) const override;
  std::string describe() const override;
  int sms() const override { return d_.sms; }
  const Roofline& device() const { return d_; }
  // One kernel of `flops` and `bytes`.
  double kernel_s(double flops, double bytes, Precision p) const;

 private:
  Roofline d_;
};

// MultiTree's accelerator (§V, Table III): 16 PEs, each a 32x32 systolic
// array of MACs, output stationary, 1 GHz, double-buffered with enough
// memory bandwidth to never stall. A layer's cycles follow SCALE-Sim's
// analytical model (Samajdar et al., arXiv:1811.02883, §IV): a GEMM whose
// output is Sr x Sc with T-long dot products runs in
// ceil(Sr/R) x ceil(Sc/C) folds of 2R + C + T - 2 cycles each on an R x C
// array; the folds are spread evenly over the PEs.
struct SystolicArray {
  uint32_t rows = 32;
  uint32_t cols = 32;
  uint32_t arrays = 16;
  double clock_hz = 1e9;
  double launch_s = 0;  // a hardware-scheduled accelerator: no kernel launch

  // Cycles of one GEMM of sr x sc outputs and t-long dot products, `count`
  // times, over all the arrays.
  uint64_t gemm_cycles(double sr, double sc, double t, double count) const;
};

// Forward: each of the layer's GEMMs with the batch's rows stacked (Sr =
// batch x m, Sc = n, T = k). Backward: the input gradient (Sr = batch x m,
// Sc = k, T = n) and the weight gradient (Sr = k, Sc = n, T = batch x m).
// Layers without GEMMs (pooling, normalisation) take no cycles: SCALE-Sim
// models only convolutions and matrix products.
class SystolicModel : public ComputeModel {
 public:
  explicit SystolicModel(SystolicArray array) : a_(array) {}
  LayerTimes compute(const Layer& layer, uint32_t batch, Precision p) const override;
  std::string describe() const override;
  const SystolicArray& array() const { return a_; }

 private:
  SystolicArray a_;
};

// The presets: v100, a100, h100, b200, rtx2080 (rooflines from the
// datasheets and whitepapers named in compute.cpp; rtx2080 is NetReduce's
// Testbed 1 GPU), v100x4 (Klenk's Volta 4:1: 4x the compute at the same
// network, §II-B) and systolic (MultiTree's accelerator).
const std::vector<std::string>& compute_names();
Roofline roofline_preset(const std::string& name);  // UserError for an unknown name
// A UserError listing compute_names() for an unknown name.
std::unique_ptr<ComputeModel> make_compute_model(const std::string& name);

}  // namespace incsim::training
