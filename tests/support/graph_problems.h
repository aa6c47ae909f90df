#pragma once
// Every problem of an analysed model as the studio shows it, one per line: for QVERIFY2
// messages and for checking that a problem names its node and port.
#include <myelin/graph/analysis.h>
#include <myelin/graph/model_spec.h>

#include <QString>

inline QString problems_of(const myelin::graph::ModelSpec& spec, const myelin::graph::Analysis& a) {
    QString out;
    for (const auto& p : a.problems)
        out += QString::fromStdString(myelin::graph::describe(spec, p)) + "\n";
    return out;
}
