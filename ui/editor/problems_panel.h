#pragma once
// The Problems panel: every validation and shape problem of the model (severity, layer,
// message). Clicking one selects its layer on the canvas.
#include <myelin/graph/model_spec.h>

#include <QWidget>

class QLabel;
class QStackedWidget;
class QTreeWidget;

namespace myelin::ui {

class ProjectDocument;

class ProblemsPanel : public QWidget {
    Q_OBJECT

  public:
    explicit ProblemsPanel(ProjectDocument* document, QWidget* parent = nullptr);

    QTreeWidget* list() const { return list_; }
    int errorCount() const { return errors_; }
    int warningCount() const { return warnings_; }

  signals:
    void nodeActivated(graph::NodeId id);
    void countsChanged(int errors, int warnings);

  private:
    void refresh();

    ProjectDocument* document_;
    QStackedWidget* stack_ = nullptr;
    QTreeWidget* list_ = nullptr;
    QLabel* allClear_ = nullptr;
    int errors_ = 0;
    int warnings_ = 0;
};

} // namespace myelin::ui
