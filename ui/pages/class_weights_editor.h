#pragma once
// The Training page's class-weights editor for a loss that takes weights by class name
// (CrossEntropyLoss, NLLLoss): a table Class | Examples | Weight over the chosen data's
// classes, editable, with Balance classes (n_samples / (n_classes * count_c) from the training
// split, core's train::balanced_class_weights) and Reset. The classes and their counts are read
// by ClassCountsLoader on a worker thread (train::training_class_counts), once per data spec.
#include <myelin/graph/attributes.h>
#include <myelin/spec/training.h>

#include <QObject>
#include <QString>
#include <QWidget>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

class QLabel;
class QPushButton;
class QTableWidget;
class QTableWidgetItem;

namespace myelin::ui {

// The training split's classes and counts for one (data spec, folder, seed), read off the GUI
// thread; a newer request replaces the one under way.
class ClassCountsLoader : public QObject {
    Q_OBJECT

  public:
    using QObject::QObject;
    // Starts reading unless this key was read (or is being read) already.
    void request(const spec::DataSpec& data, const std::filesystem::path& dir, uint64_t seed);
    bool known() const { return known_; }
    bool loading() const { return running_; }
    const std::vector<std::string>& names() const { return names_; }
    const std::vector<int64_t>& counts() const { return counts_; }
    QString error() const { return error_; } // why the data could not be read

  signals:
    void changed();

  private:
    struct Key {
        spec::DataSpec data;
        std::filesystem::path dir;
        uint64_t seed = 0;
        bool operator==(const Key& other) const = default;
    };
    void start();
    std::optional<Key> wanted_, loaded_;
    bool running_ = false, known_ = false;
    std::vector<std::string> names_;
    std::vector<int64_t> counts_;
    QString error_;
};

class ClassWeightsEditor : public QWidget {
    Q_OBJECT

  public:
    explicit ClassWeightsEditor(ClassCountsLoader* classes, QWidget* parent = nullptr);

    // Shows `table` (the project's weights) over the loader's classes without emitting edited.
    void showTable(const graph::NumberTable& table);
    const graph::NumberTable& table() const { return table_; }
    // The weight shown for each row, in row order (classes first, then names not in the data).
    std::vector<double> shownWeights() const;
    QTableWidget* tableWidget() const { return view_; }

  signals:
    // A committed change: the new table and the undo text.
    void edited(const graph::NumberTable& table, const QString& text);

  private:
    void rebuild();
    void onItemChanged(QTableWidgetItem* item);
    void balance();
    // The table of `weights` (one per class, in class order; 1 is left out) and the names of
    // the project's table the data does not have, kept as they are.
    graph::NumberTable tableOf(const std::vector<double>& weights) const;

    ClassCountsLoader* classes_;
    graph::NumberTable table_;
    QTableWidget* view_ = nullptr;
    QPushButton* balance_ = nullptr;
    QPushButton* reset_ = nullptr;
    QLabel* status_ = nullptr;
    bool showing_ = false;
};

} // namespace myelin::ui
