#pragma once
// Typed editors built from graph::AttrDesc descriptions: spin boxes with the described ranges,
// combo boxes for enumerations, check boxes, "3, 5" text for int lists, a None box for nullable
// attributes, the description as tooltip, and an error line under the field that explains input
// the description does not accept. The node inspector (layer attributes) and the Data and
// Training pages (options of losses, optimizers, schedulers, data sources, transforms) all build
// their forms with AttrRows, so every option anywhere in the studio edits the same way.
#include <myelin/graph/attributes.h>

#include <QDoubleSpinBox>
#include <QString>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

class QCheckBox;
class QFormLayout;
class QLabel;
class QWidget;

namespace myelin::ui {

// Shortest round-tripping text ("1e-05", "0.1") and a parser that accepts any double, so the
// spin box neither rounds small values away nor rejects what a person types.
class FloatSpinBox : public QDoubleSpinBox {
  public:
    using QDoubleSpinBox::QDoubleSpinBox;

  protected:
    QString textFromValue(double value) const override;
    double valueFromText(const QString& text) const override;
    QValidator::State validate(QString& text, int& pos) const override;
};

// One attribute's editor: how to show a value in it and how to read the value back.
struct AttrRow {
    graph::AttrDesc desc;
    QWidget* editor = nullptr; // object name "attr_<name>"
    QCheckBox* none = nullptr; // nullable attributes ("attrNone_<name>")
    QLabel* error = nullptr;   // "attrError_<name>"
    std::function<void(const graph::AttrValue&)> show;
    // The value typed, or nullopt with `why` set when the text is not one.
    std::function<std::optional<graph::AttrValue>(QString& why)> read;
};

// The rows of one form section, one per description.
class AttrRows {
  public:
    // Adds a labelled row per description to `form` (widgets parented to `parent`); `onCommit`
    // runs when a value is committed (a toggle, a spin box value, a combo choice, the end of a
    // line edit, the None box), with the row's checked value, or not at all when the input is
    // invalid (the row then shows why).
    void build(const std::vector<graph::AttrDesc>& descs, QFormLayout* form, QWidget* parent,
               QObject* context,
               std::function<void(const AttrRow&, const graph::AttrValue&)> onCommit);
    // Shows `attrs` (the default where an attribute is missing) without emitting commits, and
    // clears the error lines.
    void show(const graph::Attrs& attrs);
    void setEnabled(bool enabled);

    const AttrRow* find(const QString& name) const;
    QWidget* editor(const QString& name) const;
    // The error shown under `name`'s field; empty when its input is valid.
    QString error(const QString& name) const;
    const std::vector<std::unique_ptr<AttrRow>>& rows() const { return rows_; }
    bool empty() const { return rows_.empty(); }
    void clear() { rows_.clear(); }

  private:
    std::vector<std::unique_ptr<AttrRow>> rows_;
};

std::unique_ptr<AttrRow> makeAttrRow(const graph::AttrDesc& desc, QWidget* parent);

// How a value reads in an undo text or a label: "5", "3, 5", "tanh", "None".
QString attrValueText(const graph::AttrValue& value);

// Shows `text` under a field (hidden when empty) and marks the editor invalid while it is set.
void showFieldError(QLabel* label, QWidget* editor, const QString& text);
void setInvalid(QWidget* widget, bool invalid);

// A small upper-case heading between form sections (QLabel class "sectionHeading").
QLabel* sectionHeading(const QString& text, QWidget* parent);

} // namespace myelin::ui
