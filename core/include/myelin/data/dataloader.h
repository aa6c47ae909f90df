#pragma once
// DataLoader (torch.utils.data.DataLoader): batches of a Dataset, optionally shuffled, loaded by
// background threads. Every epoch's batches (their indices) are fixed before any worker starts
// and random transforms draw from a generator seeded by (seed, epoch, batch index), so the
// batches are identical for a given seed whatever num_workers is; workers only prefetch.
#include <myelin/data/dataset.h>
#include <myelin/data/sampler.h>
#include <myelin/data/transforms.h>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace myelin::data {

using CollateFn = std::function<Example(std::vector<Example>&)>;
// Stacks inputs into [B, ...] and targets into [B, ...] (targets left undefined when absent).
Example default_collate(std::vector<Example>& examples);

struct DataLoaderOptions {
    int64_t batch_size = 1;
    bool shuffle = false;
    bool drop_last = false;
    int num_workers = 0;     // 0: load on the calling thread
    int prefetch_factor = 2; // batches in flight per worker
    uint64_t seed = 0;       // shuffle order and random transforms
    SamplerPtr sampler;      // replaces shuffle when set (e.g. WeightedRandomSampler)
    TransformPtr transform;  // applied to each example's input on the loading thread
    CollateFn collate;       // default_collate when empty
};

class DataLoader {
  public:
    DataLoader(DatasetPtr dataset, DataLoaderOptions options);
    ~DataLoader(); // stops and joins the workers, also mid-epoch
    DataLoader(const DataLoader&) = delete;
    DataLoader& operator=(const DataLoader&) = delete;

    int64_t size() const { return batch_sampler_.size(); } // batches per epoch
    const DatasetPtr& dataset() const { return dataset_; }
    // Starts epoch `epoch` (abandoning the current one) at batch `first_batch` (a resumed run
    // continues mid-epoch with exactly the batches it would have seen); begin() starts the next
    // epoch.
    void start_epoch(uint64_t epoch, int64_t first_batch = 0);
    int64_t next_batch_index() const { return next_batch_; } // position within the epoch
    uint64_t epoch() const { return epoch_; }
    // The next batch of the current epoch (starting one if none is running); nullopt at its end.
    // A failure while loading is rethrown here as myelin::Error naming the batch and the index.
    std::optional<Example> next();

    class Iterator {
      public:
        using value_type = Example;
        using difference_type = std::ptrdiff_t;
        Iterator() = default;
        explicit Iterator(DataLoader* loader) : loader_(loader) { ++*this; }
        Example& operator*() { return *batch_; }
        Example* operator->() { return &*batch_; }
        Iterator& operator++() {
            batch_ = loader_->next();
            return *this;
        }
        bool operator==(const Iterator& o) const { return !batch_ && !o.batch_; }

      private:
        DataLoader* loader_ = nullptr;
        std::optional<Example> batch_;
    };
    Iterator begin();
    Iterator end() { return {}; }

  private:
    Example load_batch(int64_t batch) const;
    void worker_loop();
    void stop_workers();

    DatasetPtr dataset_;
    DataLoaderOptions options_;
    bool default_collate_ = false; // no collate given: batches may be gathered at once
    BatchSampler batch_sampler_;
    uint64_t epoch_ = 0;
    uint64_t next_epoch_ = 0;
    bool active_ = false;
    std::vector<std::vector<int64_t>> batches_; // this epoch's indices, fixed up front
    int64_t next_batch_ = 0;                    // next batch handed to the consumer

    // Worker state, guarded by mutex_.
    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool stop_ = false;
    int64_t next_claim_ = 0; // next batch a worker may take
    struct Slot {
        std::optional<Example> batch;
        std::exception_ptr error;
    };
    std::map<int64_t, Slot> ready_;
};

} // namespace myelin::data
