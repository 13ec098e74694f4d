#include "training/compute.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace incsim::training {

LayerTimes layer_times(const ComputeModel& model, const Layer& layer, uint32_t batch, Precision p) {
  if (layer.measured) return {layer.measured->forward_s, layer.measured->backward_s, layer.measured->input_grad_after_s};
  return model.compute(layer, batch, p);
}

double Roofline::peak_flops(Precision p) const {
  switch (p) {
    case Precision::fp32: return peak_fp32_flops;
    case Precision::fp16: return peak_fp16_flops;
    case Precision::bf16: return peak_bf16_flops;
  }
  return 0;
}

double RooflineModel::kernel_s(double flops, double bytes, Precision p) const {
  return std::max(flops / (d_.peak_flops(p) * d_.efficiency), bytes / d_.memory_bytes_per_s) + d_.launch_s;
}

LayerTimes RooflineModel::compute(const Layer& layer, uint32_t batch, Precision p) const {
  if (d_.peak_flops(p) <= 0) throw UserError(d_.name + " does not compute in " + to_string(p));
  const double flops = layer.forward_flops * batch, bytes = layer.forward_bytes(batch, p);
  const double kernel = kernel_s(flops, bytes, p);
  return {kernel, 2 * kernel};
}

std::string RooflineModel::describe() const {
  char text[200];
  std::snprintf(text, sizeof text,
                "%s roofline: %.1f/%.1f/%.1f TFLOP/s fp32/fp16/bf16 x %.2f, %.0f GB/s, %.0f us per kernel",
                d_.name.c_str(), d_.peak_fp32_flops / 1e12, d_.peak_fp16_flops / 1e12, d_.peak_bf16_flops / 1e12,
                d_.efficiency, d_.memory_bytes_per_s / 1e9, d_.launch_s * 1e6);
  return text;
}

uint64_t SystolicArray::gemm_cycles(double sr, double sc, double t, double count) const {
  if (sr <= 0 || sc <= 0 || t <= 0 || count <= 0) return 0;
  const double folds = std::ceil(sr / rows) * std::ceil(sc / cols) * count;
  const double per_array = std::ceil(folds / arrays);
  return static_cast<uint64_t>(per_array * (2.0 * rows + cols + t - 2));
}

LayerTimes SystolicModel::compute(const Layer& layer, uint32_t batch, Precision) const {
  uint64_t forward = 0, backward = 0;
  for (const auto& g : layer.gemms) {
    const double rows = g.m * batch;
    forward += a_.gemm_cycles(rows, g.n, g.k, g.count);
    backward += a_.gemm_cycles(rows, g.k, g.n, g.count) + a_.gemm_cycles(g.k, g.n, rows, g.count);
  }
  const double cycle = 1 / a_.clock_hz;
  return {forward * cycle + a_.launch_s, backward * cycle + 2 * a_.launch_s};
}

std::string SystolicModel::describe() const {
  char text[160];
  std::snprintf(text, sizeof text, "systolic: %u arrays of %ux%u MACs, output stationary, %.2f GHz", a_.arrays,
                a_.rows, a_.cols, a_.clock_hz / 1e9);
  return text;
}

const std::vector<std::string>& compute_names() {
  static const std::vector<std::string> names{"v100", "a100", "h100", "b200", "v100x4", "rtx2080", "systolic"};
  return names;
}

Roofline roofline_preset(const std::string& name) {
  // NVIDIA Tesla V100 SXM2 datasheet (2017): 15.7 TFLOP/s FP32, 125 TFLOP/s
  // tensor (FP16), no BF16, 900 GB/s HBM2. NVIDIA Tesla V100 GPU Architecture
  // whitepaper (2017): 80 SMs (of GV100's 84).
  if (name == "v100") return {"v100", 15.7e12, 125e12, 0, 900e9, 80};
  // Klenk §II-B "Volta 4:1": four times Volta's compute at the same network
  // bandwidth; the whole GPU (memory too) four times faster, so every layer
  // takes a quarter of the time but its launch; Volta's 80 SMs, each faster.
  if (name == "v100x4") return {"v100x4", 4 * 15.7e12, 4 * 125e12, 0, 4 * 900e9, 80};
  // NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB): 19.5 TFLOP/s FP32,
  // 312 TFLOP/s FP16 and BF16 tensor (dense), 2039 GB/s HBM2e. NVIDIA A100
  // Tensor Core GPU Architecture whitepaper (2020): 108 SMs (of GA100's 128).
  if (name == "a100") return {"a100", 19.5e12, 312e12, 312e12, 2039e9, 108};
  // NVIDIA H100 Tensor Core GPU datasheet (SXM5): 67 TFLOP/s FP32, 989.4
  // TFLOP/s FP16 and BF16 tensor (dense; 1979 with sparsity), 3.35 TB/s HBM3.
  // NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): 132 SMs in
  // the SXM5 H100 (of GH100's 144).
  if (name == "h100") return {"h100", 67e12, 989.4e12, 989.4e12, 3.35e12, 132};
  // NVIDIA HGX B200 datasheet, per GPU (the 8-GPU figures / 8): 75 TFLOP/s
  // FP32, 2.25 PFLOP/s FP16 and BF16 tensor (dense; 4.5 with sparsity),
  // 8 TB/s HBM3e. 148 SMs: two dies of 74 enabled SMs each (NVIDIA's
  // Blackwell datasheets give no count; Chips and Cheese, "Nvidia's B200:
  // Keeping the CUDA Juggernaut Rolling", 2025, from the device query).
  if (name == "b200") return {"b200", 75e12, 2.25e15, 2.25e15, 8e12, 148};
  // NetReduce §5.1, Testbed 1: "one NVIDIA Geforce RTX 2080 8 GB GPU" per
  // machine. NVIDIA Turing GPU Architecture whitepaper (2018), Appendix A,
  // GeForce RTX 2080 (reference clocks, 1710 MHz boost): 10.1 TFLOP/s FP32,
  // 40.3 TFLOP/s FP16 tensor with FP32 accumulate (mixed-precision training
  // accumulates in FP32; GeForce runs it at half the FP16-accumulate rate of
  // 80.5), no BF16, 448 GB/s GDDR6, 46 SMs (TU104: 48, 46 enabled).
  if (name == "rtx2080") return {"rtx2080", 10.1e12, 40.3e12, 0, 448e9, 46};
  throw UserError("unknown GPU '" + name + "'; the GPUs are v100, a100, h100, b200, v100x4, rtx2080");
}

std::unique_ptr<ComputeModel> make_compute_model(const std::string& name) {
  if (name == "systolic") return std::make_unique<SystolicModel>(SystolicArray{});
  const auto& names = compute_names();
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw UserError("unknown compute model '" + name + "'; the compute models are " + name_list(names));
  return std::make_unique<RooflineModel>(roofline_preset(name));
}

}  // namespace incsim::training
