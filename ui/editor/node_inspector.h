#pragma once
// The inspector for the selected node: its name, its kind, one typed editor per attribute built
// from the registry's AttrDesc (spin boxes with the described ranges, combo boxes for
// enumerations, check boxes, "3, 5" text for int lists, a None box for nullable attributes; the
// description as tooltip), and the training options frozen and lr multiplier. Each committed
// change is one undo command; input that does not fit the description is explained under its
// field and not committed.
#include "widgets/attr_editor.h"

#include <myelin/graph/model_spec.h>

#include <QWidget>

#include <memory>
#include <vector>

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QScrollArea;
class QVBoxLayout;

namespace myelin::ui {

class ProjectDocument;

class NodeInspector : public QWidget {
    Q_OBJECT

  public:
    explicit NodeInspector(ProjectDocument* document, QWidget* parent = nullptr);
    ~NodeInspector() override;

    // What to inspect: one node is edited; none or several show a short note instead.
    void setSelection(const std::vector<graph::NodeId>& ids);
    graph::NodeId node() const { return node_; }

    // The editor of attribute `name` (object name "attr_<name>"), or null.
    QWidget* attributeEditor(const QString& name) const;
    // The message under attribute `name`'s editor; empty when its input is valid.
    QString attributeError(const QString& name) const;
    QLineEdit* nameEditor() const { return nameEdit_; }
    // Puts the keyboard focus into the name field with its text selected.
    void focusName();

  private:
    void rebuild();
    void refresh();
    void commitAttribute(const AttrRow& row, const graph::AttrValue& value);
    void commitName();
    void commitTraining();

    ProjectDocument* document_;
    graph::NodeId node_ = -1;
    int selectionCount_ = 0;
    std::string shownKind_;

    QScrollArea* scroll_ = nullptr;
    QWidget* content_ = nullptr;
    QLabel* emptyNote_ = nullptr;
    QLabel* title_ = nullptr;
    QLabel* kindDoc_ = nullptr;
    QLabel* outputInfo_ = nullptr;
    QLabel* problems_ = nullptr;
    QLineEdit* nameEdit_ = nullptr;
    QLabel* nameError_ = nullptr;
    QCheckBox* frozen_ = nullptr;
    QDoubleSpinBox* lrMultiplier_ = nullptr;
    AttrRows rows_;
};

} // namespace myelin::ui
