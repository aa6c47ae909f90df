#pragma once
// The series picker of the runs comparison: every recorded key of the selected runs in groups
// (loss and metrics, optimizer and progress, one group per per-layer family, the rest), each
// with a tick box, and a filter line above.
#include <QString>
#include <QStringList>
#include <QWidget>

#include <set>
#include <string>

class QLineEdit;
class QTreeWidget;

namespace myelin::ui {

class SeriesPicker : public QWidget {
    Q_OBJECT
  public:
    explicit SeriesPicker(QWidget* parent = nullptr);

    // Replaces the keys; those in `ticked` are ticked. Emits nothing.
    void setKeys(const std::set<std::string>& keys, const QStringList& ticked);
    // Every key, in the picker's order.
    QStringList keys() const;
    // Ticks exactly these keys (opening their groups). Emits nothing.
    void setTicked(const QStringList& ticked);

  signals:
    // The person ticked (on) or unticked a key.
    void toggled(const QString& key, bool on);

  private:
    void applyFilter(const QString& text);
    QLineEdit* filter_ = nullptr;
    QTreeWidget* tree_ = nullptr;
    bool filling_ = false; // item changes while filling are not the person's
};

} // namespace myelin::ui
