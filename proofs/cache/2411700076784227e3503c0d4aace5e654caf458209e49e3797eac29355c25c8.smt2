(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(assert
 (not (and (distinct (_ bv0 16) (_ bv32768 16)) true)))
(check-sat)
