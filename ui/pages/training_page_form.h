#pragma once
// Helpers the Training page's source files share (training_page.cpp, training_page_settings.cpp,
// training_page_lr_preview.cpp): the page's form layout, labels and spin boxes. Internal to the
// page; defined in training_page_settings.cpp.
#include <myelin/spec/training.h>

#include <QComboBox>
#include <QString>

class QFormLayout;
class QLabel;
class QSpinBox;
class QVBoxLayout;
class QWidget;

namespace myelin::ui {

class FloatSpinBox;

namespace training_form {

QFormLayout* makeForm(QWidget* parent = nullptr);
// The same label width in every form of the page, so fields line up across sections.
void alignLabels(QFormLayout* form);

// A word-wrapped label whose preferred height is the one its current width needs.
QLabel* noteLabel(const QString& objectName, QWidget* parent);
// A hidden note label of class `cls` ("fieldError", "fieldWarning") for a field's message.
QLabel* fieldMessage(const QString& objectName, const char* cls, QWidget* parent);
// A field with a message line under it (errors, warnings).
QVBoxLayout* withMessage(QWidget* editor, QLabel* message);

QSpinBox* intSpin(const QString& objectName, int lo, int hi, const QString& tip, QWidget* parent);
FloatSpinBox* floatSpin(const QString& objectName, double lo, double hi, const QString& tip,
                        QWidget* parent);
// "1 epoch", "5 epochs": the suffix follows the value.
void updateUnit(QSpinBox* spin);
void setUnits(QSpinBox* spin, const QString& one, const QString& many);

// A setting's word (spec/training.h's tables), the data of its combo box item.
template <class E> QString word(E value) {
    return QString::fromLatin1(spec::name_of(value));
}
// The setting a combo box of such items shows.
template <class E> E valueOf(const QComboBox* combo) {
    return spec::setting_named<E>(combo->currentData().toString().toStdString()).value_or(E{});
}

} // namespace training_form

} // namespace myelin::ui
