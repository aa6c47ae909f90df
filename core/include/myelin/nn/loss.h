#pragma once
// Loss functions (torch.nn.functional losses and the torch.nn loss classes), with PyTorch 1.13's
// exact formulas: reductions, class weights, ignore_index and label smoothing. Functional forms
// take an options struct; the classes hold the options and are called like functions.
//
// cross_entropy and nll_loss with class-index targets run a fused kernel (log-softmax + NLL in one
// pass, one pass back); the other losses are composed from differentiable tensor ops, so every
// input that requires grad (targets included, where PyTorch differentiates them) gets a gradient.
// Wrong target dtypes or shapes throw DTypeError / ShapeError naming the expected layout.
#include <myelin/tensor.h>

#include <cstdint>
#include <string>
#include <utility>

namespace myelin::nn {

enum class Reduction {
    None, // per-element (or per-sample) losses
    Mean,
    Sum,
    BatchMean, // kl_div only: sum / input.size(0)
};
const char* reduction_name(Reduction r); // "none", "mean", "sum", "batchmean"
// Parses "none" / "mean" / "sum" / "batchmean" (throws Error naming the accepted values).
Reduction parse_reduction(const std::string& name);

namespace functional {

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
// 0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere; beta = 0 is l1_loss.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      Reduction reduction = Reduction::Mean, double beta = 1.0);
// 0.5 d^2 where |d| < delta, delta (|d| - 0.5 delta) elsewhere.
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                  double delta = 1.0);

struct CrossEntropyOptions {
    Tensor weight;               // optional [C] class weights
    int64_t ignore_index = -100; // class-index targets only
    Reduction reduction = Reduction::Mean;
    double label_smoothing = 0.0; // in [0, 1]
};
// input: logits [N, C], [N, C, d1, ...] or [C]. target: int64 class indices [N] / [N, d1, ...] /
// [] (fused log_softmax + nll), or float class probabilities of the input's shape.
Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const CrossEntropyOptions& options = {});

struct NllLossOptions {
    Tensor weight; // optional [C]
    int64_t ignore_index = -100;
    Reduction reduction = Reduction::Mean;
};
// input: log-probabilities [N, C], [N, C, d1, ...] or [C]; target: int64 class indices.
Tensor nll_loss(const Tensor& input, const Tensor& target, const NllLossOptions& options = {});

// input: probabilities in [0, 1]; log terms clamped at -100 like PyTorch. weight broadcasts.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            Reduction reduction = Reduction::Mean);

struct BCEWithLogitsOptions {
    Tensor weight;     // broadcasts to the input
    Tensor pos_weight; // broadcasts over the last dim (one per class)
    Reduction reduction = Reduction::Mean;
};
// Numerically stable sigmoid + binary cross-entropy.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BCEWithLogitsOptions& options = {});

// input: log-probabilities; target: probabilities (or log-probabilities with log_target).
// Reduction::BatchMean divides the sum by input.size(0) (PyTorch's recommended form).
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
              bool log_target = false);

// x1, x2: [N, D] (or [D]); target: [N] (or []) of 1 / -1.
Tensor cosine_embedding_loss(const Tensor& x1, const Tensor& x2, const Tensor& target,
                             double margin = 0.0, Reduction reduction = Reduction::Mean);
// max(0, -target * (x1 - x2) + margin); all three broadcast.
Tensor margin_ranking_loss(const Tensor& x1, const Tensor& x2, const Tensor& target,
                           double margin = 0.0, Reduction reduction = Reduction::Mean);

// A classifier's row scores, from which accuracy, top-k and the confusion matrix are counted
// without copying the logits off their device: logits [N, C] (floating), target int64 [N] in
// [0, C) (IndexError otherwise); int64 [N, 2] on the logits' device: each row's predicted class
// (torch.argmax: the first maximum, NaN above every number) and how many classes rank above its
// target under that order (ties: the lower index first). No autograd.
Tensor class_scores(const Tensor& logits, const Tensor& target);

} // namespace functional

// --- classes ---------------------------------------------------------------------------------
// A loss of (input, target): what the trainer and the studio's loss picker hold.
class Loss {
  public:
    virtual ~Loss() = default;
    virtual Tensor forward(const Tensor& input, const Tensor& target) const = 0;
    Tensor operator()(const Tensor& input, const Tensor& target) const {
        return forward(input, target);
    }
    virtual const char* name() const = 0; // PyTorch's class name: "CrossEntropyLoss"
};

class MSELoss final : public Loss {
  public:
    explicit MSELoss(Reduction reduction = Reduction::Mean) : reduction_(reduction) {}
    Tensor forward(const Tensor& input, const Tensor& target) const override;
    const char* name() const override { return "MSELoss"; }
    Reduction reduction() const { return reduction_; }

  private:
    Reduction reduction_;
};

class L1Loss final : public Loss {
  public:
    explicit L1Loss(Reduction reduction = Reduction::Mean) : reduction_(reduction) {}
    Tensor forward(const Tensor& input, const Tensor& target) const override;
    const char* name() const override { return "L1Loss"; }
    Reduction reduction() const { return reduction_; }

  private:
    Reduction reduction_;
};

class SmoothL1Loss final : public Loss {
  public:
    explicit SmoothL1Loss(Reduction reduction = Reduction::Mean, double beta = 1.0)
        : reduction_(reduction), beta_(beta) {}
    Tensor forward(const Tensor& input, const Tensor& target) const override;
    const char* name() const override { return "SmoothL1Loss"; }
    Reduction reduction() const { return reduction_; }
    double beta() const { return beta_; }

  private:
    Reduction reduction_;
    double beta_;
};

class HuberLoss final : public Loss {
  public:
    explicit HuberLoss(Reduction reduction = Reduction::Mean, double delta = 1.0)
        : reduction_(reduction), delta_(delta) {}
    Tensor forward(const Tensor& input, const Tensor& target) const override;
    const char* name() const override { return "HuberLoss"; }
    Reduction reduction() const { return reduction_; }
    double delta() const { return delta_; }

  private:
    Reduction reduction_;
    double delta_;
};

class CrossEntropyLoss final : public Loss {
  public:
    explicit CrossEntropyLoss(functional::CrossEntropyOptions options = {})
        : options_(std::move(options)) {}
    Tensor forward(const Tensor& input, const Tensor& target) const override {
        return functional::cross_entropy(input, target, options_);
    }
    const char* name() const override { return "CrossEntropyLoss"; }
    const functional::CrossEntropyOptions& options() const { return options_; }

  private:
    functional::CrossEntropyOptions options_;
};

class NLLLoss final : public Loss {
  public:
    explicit NLLLoss(functional::NllLossOptions options = {}) : options_(std::move(options)) {}
    Tensor forward(const Tensor& input, const Tensor& target) const override {
        return functional::nll_loss(input, target, options_);
    }
    const char* name() const override { return "NLLLoss"; }
    const functional::NllLossOptions& options() const { return options_; }

  private:
    functional::NllLossOptions options_;
};

class BCELoss final : public Loss {
  public:
    explicit BCELoss(Tensor weight = {}, Reduction reduction = Reduction::Mean)
        : weight_(std::move(weight)), reduction_(reduction) {}
    Tensor forward(const Tensor& input, const Tensor& target) const override {
        return functional::binary_cross_entropy(input, target, weight_, reduction_);
    }
    const char* name() const override { return "BCELoss"; }

  private:
    Tensor weight_;
    Reduction reduction_;
};

class BCEWithLogitsLoss final : public Loss {
  public:
    explicit BCEWithLogitsLoss(functional::BCEWithLogitsOptions options = {})
        : options_(std::move(options)) {}
    Tensor forward(const Tensor& input, const Tensor& target) const override {
        return functional::binary_cross_entropy_with_logits(input, target, options_);
    }
    const char* name() const override { return "BCEWithLogitsLoss"; }
    const functional::BCEWithLogitsOptions& options() const { return options_; }

  private:
    functional::BCEWithLogitsOptions options_;
};

class KLDivLoss final : public Loss {
  public:
    explicit KLDivLoss(Reduction reduction = Reduction::Mean, bool log_target = false)
        : reduction_(reduction), log_target_(log_target) {}
    Tensor forward(const Tensor& input, const Tensor& target) const override {
        return functional::kl_div(input, target, reduction_, log_target_);
    }
    const char* name() const override { return "KLDivLoss"; }

  private:
    Reduction reduction_;
    bool log_target_;
};

// Three-input losses: (x1, x2, target).
class CosineEmbeddingLoss {
  public:
    explicit CosineEmbeddingLoss(double margin = 0.0, Reduction reduction = Reduction::Mean)
        : margin_(margin), reduction_(reduction) {}
    Tensor operator()(const Tensor& x1, const Tensor& x2, const Tensor& target) const {
        return functional::cosine_embedding_loss(x1, x2, target, margin_, reduction_);
    }

  private:
    double margin_;
    Reduction reduction_;
};

class MarginRankingLoss {
  public:
    explicit MarginRankingLoss(double margin = 0.0, Reduction reduction = Reduction::Mean)
        : margin_(margin), reduction_(reduction) {}
    Tensor operator()(const Tensor& x1, const Tensor& x2, const Tensor& target) const {
        return functional::margin_ranking_loss(x1, x2, target, margin_, reduction_);
    }

  private:
    double margin_;
    Reduction reduction_;
};

} // namespace myelin::nn
