// The model zoo. Convolutions carry their batch normalisation (2 parameters
// per channel) and activation, as one fused kernel; elementwise work is
// counted at one or two operations per output element, small beside the
// GEMMs. A residual addition belongs to the block's last convolution.
#include "training/zoo.h"

#include "core/error.h"

namespace incsim::training {
namespace {

// An image's feature map between layers.
struct Shape {
  int h = 0, w = 0, c = 0;
  double elements() const { return static_cast<double>(h) * w * c; }
};

enum class Affine { bias, batchnorm };

// Appends layers in forward order, following the feature map's shape.
class Builder {
 public:
  Builder(std::string name, std::string source) {
    m_.name = std::move(name);
    m_.source = std::move(source);
  }

  Shape shape;  // the current feature map

  void conv(const std::string& name, int filters, int kernel, int stride, int pad, Affine affine) {
    Shape out{(shape.h + 2 * pad - kernel) / stride + 1, (shape.w + 2 * pad - kernel) / stride + 1, filters};
    Layer l = named(name, LayerKind::conv);
    l.gemms.push_back({static_cast<double>(out.h) * out.w, static_cast<double>(filters),
                       static_cast<double>(kernel) * kernel * shape.c});
    l.params = static_cast<uint64_t>(kernel) * kernel * shape.c * filters + affine_params(affine, filters);
    finish(l, shape.elements(), out.elements(), 2);
    shape = out;
  }

  void pool(const std::string& name, int kernel, int stride, int pad) {
    Shape out{(shape.h + 2 * pad - kernel) / stride + 1, (shape.w + 2 * pad - kernel) / stride + 1, shape.c};
    Layer l = named(name, LayerKind::pool);
    finish(l, shape.elements(), out.elements(), static_cast<double>(kernel) * kernel);
    shape = out;
  }

  // A fully connected layer on `rows` vectors of `in` features per sample.
  void linear(const std::string& name, double rows, int in, int out, bool bias = true,
              TensorSplit split = TensorSplit::none) {
    Layer l = named(name, LayerKind::linear);
    l.gemms.push_back({rows, static_cast<double>(out), static_cast<double>(in)});
    l.params = static_cast<uint64_t>(in) * out + (bias ? out : 0);
    l.split = split;
    finish(l, rows * in, rows * out, 1);
  }

  // `rows` lookups per sample into a table of `entries` x `dim`; a table
  // shared with an earlier layer (`shared`) costs its lookups, not its weights.
  void embedding(const std::string& name, double rows, uint64_t entries, int dim, bool shared = false) {
    Layer l = named(name, LayerKind::embedding);
    l.params = shared ? 0 : entries * dim;
    l.split = TensorSplit::replicated;
    finish(l, rows, rows * dim, 0);
  }

  void norm(const std::string& name, double rows, int features) {
    Layer l = named(name, LayerKind::norm);
    l.params = 2 * static_cast<uint64_t>(features);
    l.split = TensorSplit::replicated;
    finish(l, rows * features, rows * features, 8);  // mean, variance, scale, shift
  }

  // Scaled dot-product attention over `tokens` queries and keys, split by
  // heads (Vaswani et al. 2017, §3.2): Q K^T, softmax, times V.
  void attention(const std::string& name, double tokens, int hidden, int heads) {
    const double dh = static_cast<double>(hidden) / heads;
    Layer l = named(name, LayerKind::attention);
    l.gemms.push_back({tokens, tokens, dh, static_cast<double>(heads)});
    l.gemms.push_back({tokens, dh, tokens, static_cast<double>(heads)});
    l.split = TensorSplit::heads;
    l.forward_flops = 5 * tokens * tokens * heads;  // scale, max, exp, sum, divide
    finish(l, 3 * tokens * hidden, tokens * hidden, 0);
  }

  // One transformer block of `tokens` x `hidden`, Megatron's splits marked.
  // `cross` adds a decoder's attention over the encoder (its Q, K and V
  // projections counted as one layer, as the parameters are the same).
  void transformer_block(const std::string& p, double tokens, int hidden, int heads, int ffn, bool pre_norm,
                         bool cross) {
    const size_t first = m_.layers.size();
    auto sublayer = [&](const std::string& a, const std::string& ln) {
      if (pre_norm) norm(p + "." + ln, tokens, hidden);
      linear(p + "." + a + ".qkv", tokens, hidden, 3 * hidden, true, TensorSplit::column);
      attention(p + "." + a + ".core", tokens, hidden, heads);
      linear(p + "." + a + ".out", tokens, hidden, hidden, true, TensorSplit::row);
      if (!pre_norm) norm(p + "." + ln, tokens, hidden);
    };
    sublayer("attn", "ln1");
    if (cross) sublayer("cross", "ln_cross");
    if (pre_norm) norm(p + ".ln2", tokens, hidden);
    linear(p + ".ffn.fc1", tokens, hidden, ffn, true, TensorSplit::column);
    m_.layers.back().forward_flops += 8 * tokens * ffn;  // GELU (ReLU in Vaswani et al.: less)
    linear(p + ".ffn.fc2", tokens, ffn, hidden, true, TensorSplit::row);
    if (!pre_norm) norm(p + ".ln2", tokens, hidden);
    for (size_t i = first; i < m_.layers.size(); ++i) m_.layers[i].block = block_;
    ++block_;
  }

  // The output projection onto the vocabulary, its weights tied to the
  // token embedding (so no parameters of its own but `bias`).
  void tied_output(const std::string& name, double tokens, int hidden, int vocabulary, bool bias) {
    linear(name, tokens, hidden, vocabulary, false, TensorSplit::column);
    m_.layers.back().params = bias ? vocabulary : 0;
  }

  Model take(uint32_t sequence = 0) {
    m_.sequence_length = sequence;
    return std::move(m_);
  }

 private:
  static uint64_t affine_params(Affine a, int channels) {
    return a == Affine::bias ? channels : 2 * static_cast<uint64_t>(channels);
  }

  Layer named(const std::string& name, LayerKind kind) {
    Layer l;
    l.name = name;
    l.kind = kind;
    return l;
  }

  void finish(Layer& l, double in, double out, double flops_per_output) {
    l.input_elements = in;
    l.output_elements = out;
    for (const auto& g : l.gemms) l.forward_flops += 2 * g.macs();
    l.forward_flops += flops_per_output * out;
    m_.layers.push_back(std::move(l));
  }

  Model m_;
  int block_ = 0;
};

// AlexNet's and VGG's classifier on the last feature map: two layers of
// 4096, then the 1000 ImageNet classes.
Model classifier(Builder& b) {
  b.linear("fc6", 1, static_cast<int>(b.shape.elements()), 4096);
  b.linear("fc7", 1, 4096, 4096);
  b.linear("fc8", 1, 4096, 1000);
  return b.take();
}

// AlexNet as torchvision builds it, the single-GPU variant of Krizhevsky,
// "One weird trick for parallelizing convolutional neural networks" (2014,
// arXiv:1404.5997): 64-192-384-256-256 filters, 224x224 input.
Model alexnet() {
  Builder b("alexnet", "Krizhevsky 2014, arXiv:1404.5997 (torchvision alexnet)");
  b.shape = {224, 224, 3};
  b.conv("conv1", 64, 11, 4, 2, Affine::bias);
  b.pool("pool1", 3, 2, 0);
  b.conv("conv2", 192, 5, 1, 2, Affine::bias);
  b.pool("pool2", 3, 2, 0);
  b.conv("conv3", 384, 3, 1, 1, Affine::bias);
  b.conv("conv4", 256, 3, 1, 1, Affine::bias);
  b.conv("conv5", 256, 3, 1, 1, Affine::bias);
  b.pool("pool5", 3, 2, 0);
  return classifier(b);
}

// VGG-16, configuration D of Simonyan and Zisserman, "Very Deep
// Convolutional Networks for Large-Scale Image Recognition" (ICLR 2015),
// Table 1.
Model vgg16() {
  Builder b("vgg16", "Simonyan and Zisserman, ICLR 2015, Table 1 (D)");
  b.shape = {224, 224, 3};
  const int stages[5][2] = {{64, 2}, {128, 2}, {256, 3}, {512, 3}, {512, 3}};
  for (int s = 0; s < 5; ++s) {
    for (int i = 0; i < stages[s][1]; ++i)
      b.conv("conv" + std::to_string(s + 1) + "_" + std::to_string(i + 1), stages[s][0], 3, 1, 1, Affine::bias);
    b.pool("pool" + std::to_string(s + 1), 2, 2, 0);
  }
  return classifier(b);
}

// The ResNet stem and stages of He et al., "Deep Residual Learning for Image
// Recognition" (CVPR 2016), Table 1, as torchvision builds them (stride in
// the bottleneck's 3x3 convolution). `stages` of them are built.
void resnet_trunk(Builder& b, bool bottleneck, const int (&blocks)[4], int stages) {
  b.shape = {224, 224, 3};
  b.conv("conv1", 64, 7, 2, 3, Affine::batchnorm);
  b.pool("maxpool", 3, 2, 1);
  const int expansion = bottleneck ? 4 : 1;
  for (int s = 0; s < stages; ++s) {
    const int planes = 64 << s;
    for (int i = 0; i < blocks[s]; ++i) {
      const std::string p = "layer" + std::to_string(s + 1) + "." + std::to_string(i);
      const int stride = (i == 0 && s > 0) ? 2 : 1;
      const Shape in = b.shape;
      if (bottleneck) {
        b.conv(p + ".conv1", planes, 1, 1, 0, Affine::batchnorm);
        b.conv(p + ".conv2", planes, 3, stride, 1, Affine::batchnorm);
        b.conv(p + ".conv3", planes * expansion, 1, 1, 0, Affine::batchnorm);
      } else {
        b.conv(p + ".conv1", planes, 3, stride, 1, Affine::batchnorm);
        b.conv(p + ".conv2", planes, 3, 1, 1, Affine::batchnorm);
      }
      if (stride != 1 || in.c != planes * expansion) {
        const Shape out = b.shape;
        b.shape = in;
        b.conv(p + ".downsample", planes * expansion, 1, stride, 0, Affine::batchnorm);
        b.shape = out;
      }
    }
  }
}

Model resnet(const std::string& name, bool bottleneck, const int (&blocks)[4]) {
  Builder b(name, "He et al., CVPR 2016, Table 1 (torchvision " + name + ")");
  resnet_trunk(b, bottleneck, blocks, 4);
  b.pool("avgpool", 7, 1, 0);
  b.linear("fc", 1, 512 * (bottleneck ? 4 : 1), 1000);
  return b.take();
}

// GoogLeNet of Szegedy et al., "Going Deeper with Convolutions" (CVPR 2015),
// Table 1, without the auxiliary classifiers (dropped at inference, and
// small) and without local response normalisation (no parameters).
Model googlenet() {
  Builder b("googlenet", "Szegedy et al., CVPR 2015, Table 1");
  b.shape = {224, 224, 3};
  b.conv("conv1", 64, 7, 2, 3, Affine::bias);
  b.pool("pool1", 3, 2, 1);
  b.conv("conv2_reduce", 64, 1, 1, 0, Affine::bias);
  b.conv("conv2", 192, 3, 1, 1, Affine::bias);
  b.pool("pool2", 3, 2, 1);
  // #1x1, #3x3 reduce, #3x3, #5x5 reduce, #5x5, pool proj.
  struct Inception {
    const char* name;
    int c1, r3, c3, r5, c5, proj;
  };
  const Inception table[] = {{"3a", 64, 96, 128, 16, 32, 32},     {"3b", 128, 128, 192, 32, 96, 64},
                             {"4a", 192, 96, 208, 16, 48, 64},    {"4b", 160, 112, 224, 24, 64, 64},
                             {"4c", 128, 128, 256, 24, 64, 64},   {"4d", 112, 144, 288, 32, 64, 64},
                             {"4e", 256, 160, 320, 32, 128, 128}, {"5a", 256, 160, 320, 32, 128, 128},
                             {"5b", 384, 192, 384, 48, 128, 128}};
  for (const auto& m : table) {
    const std::string p = std::string("inception") + m.name;
    const Shape in = b.shape;
    b.conv(p + ".1x1", m.c1, 1, 1, 0, Affine::bias);
    b.shape = in;
    b.conv(p + ".3x3_reduce", m.r3, 1, 1, 0, Affine::bias);
    b.conv(p + ".3x3", m.c3, 3, 1, 1, Affine::bias);
    b.shape = in;
    b.conv(p + ".5x5_reduce", m.r5, 1, 1, 0, Affine::bias);
    b.conv(p + ".5x5", m.c5, 5, 1, 2, Affine::bias);
    b.shape = in;
    b.pool(p + ".pool", 3, 1, 1);
    b.conv(p + ".pool_proj", m.proj, 1, 1, 0, Affine::bias);
    b.shape = {in.h, in.w, m.c1 + m.c3 + m.c5 + m.proj};
    if (m.name == std::string("3b") || m.name == std::string("4e")) b.pool(p + ".pool_out", 3, 2, 1);
  }
  b.pool("avgpool", 7, 1, 0);
  b.linear("fc", 1, 1024, 1000);
  return b.take();
}

// AlphaGo Zero's network, Silver et al., "Mastering the game of Go without
// human knowledge" (Nature 2017), Methods, "Neural network architecture":
// 17 input planes of 19x19, a convolutional block and 19 residual blocks of
// 256 3x3 filters (the 20-block network), a policy head (2 1x1 filters, a
// fully connected layer to 362 moves) and a value head (1 1x1 filter, 256
// hidden units, one output). SCALE-Sim's AlphaGoZero.csv, MultiTree's
// workload, lists the same layers with one residual block.
Model alphagozero() {
  Builder b("alphagozero", "Silver et al., Nature 2017, Methods");
  b.shape = {19, 19, 17};
  b.conv("conv", 256, 3, 1, 1, Affine::batchnorm);
  for (int i = 0; i < 19; ++i) {
    const std::string p = "res" + std::to_string(i);
    b.conv(p + ".conv1", 256, 3, 1, 1, Affine::batchnorm);
    b.conv(p + ".conv2", 256, 3, 1, 1, Affine::batchnorm);
  }
  const Shape tower = b.shape;
  b.conv("policy.conv", 2, 1, 1, 0, Affine::batchnorm);
  b.linear("policy.fc", 1, 2 * 19 * 19, 19 * 19 + 1);
  b.shape = tower;
  b.conv("value.conv", 1, 1, 1, 0, Affine::batchnorm);
  b.linear("value.fc1", 1, 19 * 19, 256);
  b.linear("value.fc2", 1, 256, 1);
  return b.take();
}

// Faster R-CNN (Ren et al., NeurIPS 2015) as SCALE-Sim's FasterRCNN.csv,
// MultiTree's workload, gives it: a ResNet-50 trunk through its fourth
// stage (conv4_x, the C4 backbone) on a 224x224 image and the region
// proposal network, a 3x3 convolution of 512 filters and two 1x1 ones for 9
// anchors (18 objectness scores, 36 box coordinates). The per-region head
// is not in that workload.
Model fasterrcnn() {
  Builder b("fasterrcnn", "Ren et al., NeurIPS 2015, on ResNet-50 C4 (SCALE-Sim FasterRCNN.csv)");
  resnet_trunk(b, true, {3, 4, 6, 3}, 3);
  b.conv("rpn.conv", 512, 3, 1, 1, Affine::bias);
  const Shape rpn = b.shape;
  b.conv("rpn.cls", 18, 1, 1, 0, Affine::bias);
  b.shape = rpn;
  b.conv("rpn.bbox", 36, 1, 1, 0, Affine::bias);
  return b.take();
}

// Neural collaborative filtering, NeuMF of He et al., "Neural Collaborative
// Filtering" (WWW 2017), §3.4: a matrix-factorisation embedding of 8 and an
// MLP embedding of 32 per user and item, MLP layers 64-32-16-8, a prediction
// on the 8 + 8 concatenation. The table sizes are SCALE-Sim's
// NCF_recommendation.csv (MultiTree's workload): 138000 users and items
// (MovieLens-20M has 138493 users).
Model ncf() {
  Builder b("ncf", "He et al., WWW 2017, §3.4 (SCALE-Sim NCF_recommendation.csv)");
  const uint64_t entries = 138000;
  b.embedding("mf.user", 1, entries, 8);
  b.embedding("mf.item", 1, entries, 8);
  b.embedding("mlp.user", 1, entries, 32);
  b.embedding("mlp.item", 1, entries, 32);
  b.linear("mlp.fc1", 1, 64, 32);
  b.linear("mlp.fc2", 1, 32, 16);
  b.linear("mlp.fc3", 1, 16, 8);
  b.linear("predict", 1, 16, 1);
  return b.take();
}

// The encoder-decoder Transformer of Vaswani et al., "Attention Is All You
// Need" (NeurIPS 2017), Table 3: 6 + 6 post-norm blocks, sinusoidal
// positions (no parameters), a source-target vocabulary of 37000 shared by
// both embeddings and the output projection (§5.1, §3.4). A sample is a
// sentence pair of `tokens` tokens each.
Model translation_transformer(const std::string& name, int hidden, int ffn, int heads, uint32_t tokens) {
  Builder b(name, "Vaswani et al., NeurIPS 2017, Table 3");
  const int vocabulary = 37000;
  const double t = tokens;
  b.embedding("encoder.embedding", t, vocabulary, hidden);
  for (int i = 0; i < 6; ++i) b.transformer_block("encoder." + std::to_string(i), t, hidden, heads, ffn, false, false);
  b.embedding("decoder.embedding", t, vocabulary, hidden, true);
  for (int i = 0; i < 6; ++i) b.transformer_block("decoder." + std::to_string(i), t, hidden, heads, ffn, false, true);
  b.tied_output("decoder.output", t, hidden, vocabulary, false);
  return b.take(tokens);
}

// BERT-large of Devlin et al., "BERT: Pre-training of Deep Bidirectional
// Transformers" (NAACL 2019), §3: 24 post-norm blocks of 1024 with 16 heads,
// WordPiece vocabulary 30522, 512 positions, 2 segment types; with the
// pre-training heads (the masked-LM transform and its tied decoder with a
// bias, the next-sentence classifier on the pooled first token).
Model bert_large(uint32_t tokens) {
  Builder b("bert-large", "Devlin et al., NAACL 2019, §3 (BERT-large)");
  const int hidden = 1024, vocabulary = 30522;
  const double t = tokens;
  b.embedding("embeddings", t, vocabulary + 512 + 2, hidden);
  b.norm("embeddings.ln", t, hidden);
  for (int i = 0; i < 24; ++i) b.transformer_block("encoder." + std::to_string(i), t, hidden, 16, 4096, false, false);
  b.linear("pooler", 1, hidden, hidden);
  b.linear("nsp", 1, hidden, 2);
  b.linear("mlm.transform", t, hidden, hidden);
  b.norm("mlm.ln", t, hidden);
  b.tied_output("mlm.decoder", t, hidden, vocabulary, true);
  return b.take(tokens);
}

void check_shape(const DecoderShape& s) {
  if (s.layers == 0 || s.hidden == 0 || s.heads == 0 || s.sequence == 0 || s.vocabulary == 0)
    throw UserError("the transformer's layers, hidden size, heads, sequence length and vocabulary must all be positive");
  if (s.hidden % s.heads != 0)
    throw UserError("the transformer's " + std::to_string(s.heads) + " heads do not divide its hidden size " +
                    std::to_string(s.hidden));
  // Every count must stay a 64-bit integer and every per-layer size a double
  // that is exact: at most 2^20 for each dimension is far beyond any model.
  const uint32_t limit = 1u << 20;
  if (s.layers > limit || s.hidden > limit || s.heads > limit || s.sequence > limit || s.vocabulary > limit)
    throw UserError("the transformer's sizes must each be at most " + std::to_string(limit));
}

// `positions` learned position embeddings (the context the model was built
// for, which a shorter sequence leaves unchanged).
Model decoder(const DecoderShape& s, uint32_t positions) {
  check_shape(s);
  Builder b("transformer", "decoder-only, GPT-2 layout (Radford et al. 2019, §2.3)");
  const double t = s.sequence;
  const int h = static_cast<int>(s.hidden);
  b.embedding("embedding", t, static_cast<uint64_t>(s.vocabulary) + positions, h);
  for (uint32_t i = 0; i < s.layers; ++i)
    b.transformer_block("block." + std::to_string(i), t, h, static_cast<int>(s.heads), 4 * h, true, false);
  b.norm("ln_f", t, h);
  b.tied_output("output", t, h, static_cast<int>(s.vocabulary), false);
  return b.take(s.sequence);
}

}  // namespace

Model decoder_transformer(const DecoderShape& s) { return decoder(s, s.sequence); }

const std::vector<std::string>& zoo_names() {
  static const std::vector<std::string> names{"alexnet",    "vgg16", "resnet18",        "resnet50",
                                              "googlenet",  "alphagozero",  "fasterrcnn", "ncf",
                                              "transformer-big", "transformer-base", "bert-large", "gpt2",
                                              "transformer"};
  return names;
}

Model zoo_model(const std::string& name, const ZooOptions& o) {
  auto tokens = [&](uint32_t own) { return o.sequence ? o.sequence : own; };
  if (o.sequence > (1u << 20)) throw UserError("the sequence length must be at most 1048576 tokens");
  if (name == "alexnet") return alexnet();
  if (name == "vgg16") return vgg16();
  if (name == "resnet18") return resnet("resnet18", false, {2, 2, 2, 2});
  if (name == "resnet50") return resnet("resnet50", true, {3, 4, 6, 3});
  if (name == "googlenet") return googlenet();
  if (name == "alphagozero") return alphagozero();
  if (name == "fasterrcnn") return fasterrcnn();
  if (name == "ncf") return ncf();
  if (name == "transformer-big") return translation_transformer(name, 1024, 4096, 16, tokens(80));
  if (name == "transformer-base") return translation_transformer(name, 512, 2048, 8, tokens(80));
  if (name == "bert-large") return bert_large(tokens(512));
  if (name == "gpt2") {
    // GPT-2 1.5B (Radford et al. 2019, Table 2): 48 layers of 1600, 25
    // heads, a 1024-token context, vocabulary 50257.
    Model m = decoder({48, 1600, 25, tokens(1024), 50257}, 1024);
    m.name = "gpt2";
    m.source = "Radford et al. 2019, Table 2 (1542M)";
    return m;
  }
  if (name == "transformer") {
    DecoderShape s = o.decoder;
    if (o.sequence) s.sequence = o.sequence;
    return decoder_transformer(s);
  }
  throw UserError("unknown model '" + name + "'; the models are " + name_list(zoo_names()) + ", or a workload file");
}

}  // namespace incsim::training
