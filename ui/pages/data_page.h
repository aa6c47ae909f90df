#pragma once
// The Data page: where the examples come from (the data source and its options), how they are
// split and loaded (validation fraction, batch size, workers, shuffle, drop last) and the
// transforms applied to them, each change one undoable edit of the project's spec::DataSpec. The
// right side previews what training will get: the split sizes and input shape, the first
// training examples as the model sees them (after transforms) as pictures or a table, and the
// class balance of the training split (or the target's distribution for regression); for a
// text source the tokenised examples, the vocabulary and a histogram of example lengths. The
// preview runs train::make_data on a worker thread (QtConcurrent), debounced after each change,
// so a slow source never blocks the window; a source that cannot be loaded shows its error in
// place.
#include "widgets/attr_editor.h"

#include <myelin/io/project.h>

#include <QWidget>

#include <cstdint>
#include <optional>
#include <utility>

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QListWidget;
class QPushButton;
class QSpinBox;
class QStackedWidget;
class QTableWidget;
class QTimer;
class QVBoxLayout;

namespace myelin::ui {

class ProjectDocument;
class ExampleGrid;
struct DataPreview;

class DataPage : public QWidget {
    Q_OBJECT

  public:
    explicit DataPage(ProjectDocument* document, QWidget* parent = nullptr);
    // A preview still loading is not waited for: it ends on its worker thread, its result
    // dropped.
    ~DataPage() override;

    // Loads the preview now (the debounce skipped), even when the spec did not change.
    void refreshPreview();
    // True while a preview is loading or waiting for its debounce.
    bool previewPending() const;
    // Runs the event loop until no preview is pending or `timeoutMs` passed; returns whether
    // the last preview succeeded (false on timeout).
    bool waitForPreview(int timeoutMs);
    // The message of the last failed preview; empty after a successful one.
    QString previewError() const { return errorText_; }
    // Pictures in the examples grid of the last preview (0 for tabular data).
    int previewImageCount() const;
    // The selected row of the transforms list, or -1.
    int selectedTransform() const { return selectedTransform_; }
    // The editor of option `name` of the data source / of the selected transform, or null.
    QWidget* sourceOptionEditor(const QString& name) const { return sourceRows_.editor(name); }
    QWidget* transformOptionEditor(const QString& name) const {
        return transformRows_.editor(name);
    }

  signals:
    // A preview finished and is shown (ok) or its error is (not ok). Stale results are dropped
    // without this signal.
    void previewFinished(bool ok);

  protected:
    void showEvent(QShowEvent* event) override;

  private:
    QWidget* buildSettings();
    // A word-wrapped description (named docName) and an empty form under it, in the settings
    // column: what the chosen source or transform is, and its options.
    std::pair<QLabel*, QWidget*> addDocAndForm(const QString& docName);
    void rebuildSourceForm();
    void rebuildTransformForm();
    void refresh();
    void refreshTransformList();
    void refreshLoaderFacts();

    // One edit of the data spec through the document's undo stack.
    void apply(const spec::DataSpec& after, const QString& text, const QString& mergeKey = {});
    void commitSourceKind(int index);
    void commitSourceOption(const AttrRow& row, const graph::AttrValue& value);
    void commitTransformOption(const AttrRow& row, const graph::AttrValue& value);
    void commitLoader();
    void browseFor(const QString& option, bool folder);
    void addTransform(const QString& kind);
    void removeTransform();
    void moveTransform(int delta);

    // Scheduling and the worker (data_page_preview.cpp). maybeSchedulePreview schedules a
    // preview when what it would show differs from the latest one requested.
    void maybeSchedulePreview();
    void schedulePreview();
    void startPreview();
    void finishPreview(const DataPreview& result);
    // The preview panel (data_page_preview_panel.cpp).
    QWidget* buildPreview();
    void showPreview(const DataPreview& preview);
    void showPreviewError(const QString& message);
    void clearPreview(const QString& note);
    // A text source's examples, vocabulary facts and length histogram
    // (data_page_text_preview.cpp).
    void showTextPreview(const DataPreview& preview);

    ProjectDocument* document_;

    // Settings (left).
    QWidget* settings_ = nullptr;
    QVBoxLayout* settingsColumn_ = nullptr;
    QComboBox* source_ = nullptr;
    QLabel* sourceDoc_ = nullptr;
    QWidget* sourceForm_ = nullptr;
    std::string shownSourceKind_;
    AttrRows sourceRows_;
    QDoubleSpinBox* validation_ = nullptr;
    QSpinBox* batchSize_ = nullptr;
    QSpinBox* workers_ = nullptr;
    QCheckBox* shuffle_ = nullptr;
    QCheckBox* dropLast_ = nullptr;
    QListWidget* transforms_ = nullptr;
    QPushButton* addTransform_ = nullptr;
    QPushButton* removeTransform_ = nullptr;
    QPushButton* moveUp_ = nullptr;
    QPushButton* moveDown_ = nullptr;
    QLabel* transformDoc_ = nullptr;
    QWidget* transformForm_ = nullptr;
    int selectedTransform_ = -1;
    std::string shownTransformKind_;
    AttrRows transformRows_;

    // Preview (right).
    QLabel* summary_ = nullptr;
    QLabel* loaderFacts_ = nullptr;
    QLabel* status_ = nullptr;
    QPushButton* refresh_ = nullptr;
    QLabel* error_ = nullptr;
    QLabel* examplesCaption_ = nullptr;
    QStackedWidget* examples_ = nullptr;
    ExampleGrid* grid_ = nullptr;
    QTableWidget* table_ = nullptr;
    QLabel* examplesNote_ = nullptr;
    QLabel* chartCaption_ = nullptr;
    QWidget* previewSections_ = nullptr; // examples and chart, hidden while there is no preview
    QLabel* targetStats_ = nullptr;
    QCustomPlot* chart_ = nullptr;
    QLabel* textStats_ = nullptr;      // text sources: vocabulary, <unk> rate, notes
    QWidget* lengthSection_ = nullptr; // text sources: the tokens-per-example histogram
    QLabel* lengthCaption_ = nullptr;
    QCustomPlot* lengthChart_ = nullptr;

    // Preview state. generation_ counts requests; a result of an older one is stale.
    QTimer* debounce_ = nullptr;
    bool running_ = false; // a preview is loading on the worker thread
    uint64_t generation_ = 0;
    // What the latest scheduled preview is of: the spec without its loader settings (they do
    // not change the examples), the seed and the folder relative paths resolve against.
    std::optional<spec::DataSpec> requested_;
    uint64_t requestedSeed_ = 0;
    QString requestedDir_;
    bool waitingForShow_ = false;
    bool lastOk_ = false;
    QString errorText_;
    int64_t trainSize_ = 0; // of the shown preview, for the batches-per-epoch line
};

} // namespace myelin::ui
